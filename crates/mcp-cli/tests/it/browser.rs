//! The test as a person's browser, for the logins: one GET, its status, where it redirects
//! and what page it shows.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use mcp_host::oauth::Url;

/// A browser's GET of `url`: the status, the `Location` header resolved against `url`, and
/// the body.
pub(crate) fn browse(url: &str) -> (u16, Option<String>, String) {
    let url = Url::parse(url).unwrap();
    let mut stream = TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).unwrap();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        url.host_str().unwrap()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split_whitespace().nth(1).unwrap().parse().unwrap();
    let location = answer
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("location:"))
        .map(|l| url.join(l["location:".len()..].trim()).unwrap().to_string());
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, location, body)
}
