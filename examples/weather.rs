//! The seed's weather extension: `/weather CITY` asks the model, the
//! `weather` tool answers with fake data, and `/cwd` appears after hello.
use serde_json::json;
use zot_host::ext::{self, Extension, ToolResult};

fn main() {
    let mut e = Extension::new("weather", "1.0.0");

    e.command("weather", "current weather for a city", |args| ext::prompt(format!("Tell me the weather for {args}")));

    e.tool("weather", "Get current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |args| match args["city"].as_str() {
            Some(city) => ToolResult::text(format!("{city}: sunny, 21°C (fake)")),
            None => ToolResult::error_text("invalid args"),
        });

    // Optional: register project-specific commands after hello_ack.
    e.on_hello(|host, e| {
        if !host.cwd.is_empty() {
            let cwd = host.cwd.clone();
            e.command("cwd", "show the current project directory", move |_| ext::display(&cwd));
        }
    });

    if let Err(err) = e.run() {
        zot_host::logf!("fatal: {err}");
    }
}
