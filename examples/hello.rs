//! A first extension: `/hello` displays a greeting, `/cwd` (registered in
//! the on-hello hook) shows the user's project directory, and `/counter`
//! opens a small panel driven by the arrow keys.
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use zot_host::ext::{self, Extension, Level, Panel};

fn counter_panel(n: i64) -> Panel {
    Panel {
        id: "counter".into(),
        title: "counter".into(),
        lines: vec![format!("value: {n}")],
        footer: "up/down to change, esc to close".into(),
    }
}

fn main() {
    let mut e = Extension::new("hello", "1.0.0");
    let host = e.handle();
    let count = Arc::new(AtomicI64::new(0));

    e.command("hello", "say hello", |args| {
        let who = if args.is_empty() { "world" } else { args };
        ext::display(format!("hello, {who}!"))
    });

    e.on_hello(|info, e| {
        let cwd = info.cwd.clone();
        e.command("cwd", "show the current project directory", move |_| ext::display(&cwd));
    });

    let c = Arc::clone(&count);
    e.command("counter", "open a counter panel", move |_| ext::Response::open_panel(counter_panel(c.load(Ordering::Relaxed))));
    e.on_panel_key(move |key| {
        let n = match key.key.as_str() {
            "up" => count.fetch_add(1, Ordering::Relaxed) + 1,
            "down" => count.fetch_sub(1, Ordering::Relaxed) - 1,
            "esc" => return host.close_panel(&key.panel_id),
            _ => return,
        };
        host.render_panel(&counter_panel(n));
    });
    let host = e.handle();
    e.on_panel_close(move |_| host.notify(Level::Info, "counter closed"));

    if let Err(err) = e.run() {
        zot_host::logf!("fatal: {err}");
    }
}
