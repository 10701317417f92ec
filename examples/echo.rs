//! A minimal, fast extension for tests and benchmarks: `echo` returns its
//! arguments, `slow` sleeps (and honours tool_cancel; with `note: true` it
//! first sends the note "slow N ms started"), `panic` panics,
//! `big` returns a large text block, `/echo` displays its arguments, and
//! the event `panic` panics its handler.
//! An optional first argument is appended to every tool and command name
//! (`echo _2` registers `echo_2`, `big_2`, ...), so that several copies can
//! be loaded side by side (the bench does).
use serde_json::json;
use std::time::Duration;
use zot_host::ext::{self, Extension, Level, ToolResult};

fn main() {
    let sfx = std::env::args().nth(1).unwrap_or_default();
    let mut e = Extension::new(format!("echo{sfx}"), "1.0.0");
    let any = json!({"type": "object"});
    let n = |base: &str| format!("{base}{sfx}");

    e.command(&n("echo"), "display the arguments", |args| ext::display(args));
    e.tool(&n("echo"), "Return the arguments as JSON text.", any.clone(), |args| ToolResult::text(args.to_string()));
    let host = e.handle();
    e.tool_with_cancel(&n("slow"), "Sleep args.ms milliseconds.", any.clone(), move |args, cancel| {
        let ms = args["ms"].as_u64().unwrap_or(1000);
        if args["note"] == true {
            host.notify(Level::Info, format!("slow {ms} ms started"));
        }
        match cancel.sleep(Duration::from_millis(ms)) {
            true => ToolResult::text(format!("slept {ms} ms")),
            false => ToolResult::error_text("cancelled"),
        }
    });
    e.tool(&n("panic"), "Panic (to test panic handling).", any.clone(), |_| panic!("asked to panic"));
    e.tool(&n("big"), "Return a text block of args.bytes bytes.", any, |args| {
        let n = args["bytes"].as_u64().unwrap_or(0) as usize;
        ToolResult::text("x".repeat(n))
    });

    e.on("panic", |_, _| panic!("asked to panic in an event handler"));

    if let Err(err) = e.run() {
        zot_host::logf!("fatal: {err}");
    }
}
