//! The types that cross the host's boundary: configuration, requests and
//! their outcomes, host events, listings, and typed errors. One file per
//! idea; every type is re-exported here, and from [`crate::host`].

mod config;
mod error;
mod event;
mod listing;
mod request;
mod resources;
mod response;

pub use config::*;
pub use error::*;
pub use event::*;
pub use listing::*;
pub use request::*;
pub use resources::*;
pub use response::*;
