//! Hosting zot extensions from a program of your own: load the extension
//! folders named on the command line, list what they offer, call a tool,
//! and stop them. `cargo run --example embed -- examples/rust/weather
//! weather '{"city":"Oslo"}'` (build the examples first).

use zot_host::discovery::Sources;
use zot_host::home::Home;
use zot_host::host::{Config, Host};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: embed EXTENSION_DIR [TOOL [JSON_ARGS]]")?;
    let mut config = Config::new(Home::from_env()?, std::env::current_dir()?);
    config.sources = Sources { ext_paths: vec![std::fs::canonicalize(dir)?], no_ext: true };
    let (host, _events) = Host::start(config)?;
    let load = host.wait_ready()?;
    println!("ready: {:?}, errors: {:?}", load.ready, load.errors);
    for tool in host.list()?.tools {
        println!("tool {} ({}): {}", tool.name, tool.extension, tool.description);
    }
    if let Some(tool) = args.next() {
        let json = args.next().unwrap_or_else(|| "{}".into());
        let reply = host.tool(&tool, Some(serde_json::from_str(&json)?))?;
        println!("{tool} → {}", serde_json::to_string(&reply.content)?);
    }
    host.shutdown();
    Ok(())
}
