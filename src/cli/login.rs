//! `zot mcp login NAME` and `zot mcp logout NAME` (docs/protocol.md §8.5
//! rule 11): the server of that name found as a session would find it,
//! then logged in to through the browser, or its tokens forgotten.

use crate::discovery::discover_with;
use crate::host::Config;
use crate::mcpserver::config::ServerSpec;
use std::sync::Arc;

/// Runs the login (or logout) of server `name`; the exit code.
pub fn run(config: &Config, name: &str, logout: bool) -> i32 {
    let spec = match find(config, name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zot: {e}");
            return 1;
        }
    };
    match act(&spec, config, logout) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("zot: {e}");
            1
        }
    }
}

/// The remote server `name` of the session's MCP files.
fn find(config: &Config, name: &str) -> Result<Arc<ServerSpec>, String> {
    discover_with(&config.sources, &config.mcp_configs, &config.cwd, &config.home, config.trust_project).remote_named(name)
}

#[cfg(feature = "remote")]
fn act(spec: &ServerSpec, config: &Config, logout: bool) -> Result<(), String> {
    let home = config.home.root();
    if logout {
        let had = crate::mcpserver::remote::logout(spec, home)?;
        println!("{}", if had { format!("logged out of {}", spec.name) } else { format!("{} had no login to forget", spec.name) });
        return Ok(());
    }
    crate::mcpserver::remote::login(spec, home, &mut std::io::stdout())
}

#[cfg(not(feature = "remote"))]
fn act(_spec: &ServerSpec, _config: &Config, _logout: bool) -> Result<(), String> {
    Err("this zot was built without remote servers".into())
}
