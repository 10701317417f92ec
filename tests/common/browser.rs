//! The test as the browser of an OAuth login: one plain HTTP/1.0 request
//! at a time, and a header of the answer. Included with `#[path]`.
#![allow(dead_code)]

use std::io::{Read, Write};

/// One HTTP/1.0 request: (status, head, body). `localhost` is asked at
/// 127.0.0.1.
pub fn http(method: &str, url: &str) -> (u16, String, String) {
    let rest = url.strip_prefix("http://").expect("an http url");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr = host.replacen("localhost", "127.0.0.1", 1);
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    write!(c, "{method} {path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// The value of the header `name` in `head` (any case), or "".
pub fn header<'a>(head: &'a str, name: &str) -> &'a str {
    head.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())).unwrap_or("")
}
