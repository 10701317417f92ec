//! The dispatcher thread (stub while it is being written).
use super::*;
pub(super) enum Inbox {
    Request(Request, Responder),
}
pub(super) fn spawn(
    _config: Config,
    _tx: Sender<Inbox>,
    rx: Receiver<Inbox>,
    _events: Sender<HostEvent>,
) -> Result<JoinHandle<()>, HostError> {
    std::thread::Builder::new()
        .spawn(move || {
            while let Ok(Inbox::Request(_, done)) = rx.recv() {
                done(Err(HostError::ShuttingDown));
            }
        })
        .map_err(|e| HostError::Internal(e.to_string()))
}
