//! `login --device`: the device flow (RFC 8628) on the terminal. The person is told where to
//! go and which code to enter, as `gh auth login` does, and approves on any other device while
//! the command polls. Used for `--device`, and where the authorization server offers it for
//! `--no-browser` and on a machine with no display and no `$BROWSER`.

use std::io::IsTerminal as _;
use std::sync::Arc;

use mcp_host::oauth::{DevicePrompt, DeviceUserAgent, DeviceVerification, Url};

use crate::output::cell;

/// The device agent of `login ID`: prints the code and addresses on stderr.
pub(crate) fn prompt(id: &str) -> Arc<dyn DeviceUserAgent> {
    let id = id.to_owned();
    Arc::new(DevicePrompt::new(move |v: &DeviceVerification| {
        let page = (&v.verification_uri, v.verification_uri_complete.as_ref());
        let terminal = std::io::stderr().is_terminal();
        eprintln!(
            "{}",
            shown(&id, &v.user_code, page, v.expires_in_s, terminal)
        );
        Ok(())
    }))
}

/// What the person reads: the address and the code, the address with the code filled in, and
/// how long the code lives. The code is the server's text, cleaned of terminal escapes.
fn shown(
    id: &str,
    user_code: &str,
    (page, complete): (&Url, Option<&Url>),
    expires_in_s: u64,
    terminal: bool,
) -> String {
    // On a terminal, start from a clean line: the spinner may be on it.
    let clear = if terminal { "\r\x1b[K" } else { "" };
    let code = cell(user_code, 64);
    let mut text = format!(
        "{clear}to log in to `{id}`, open {page} in a browser on any device and enter the code {code}"
    );
    if let Some(complete) = complete {
        text.push_str(&format!("\n  or open {complete} (the code filled in)"));
    }
    let minutes = expires_in_s.div_ceil(60);
    text.push_str(&format!(
        "\nwaiting for the login to be approved (the code expires in {minutes} min)"
    ));
    text
}

/// Whether no browser can be opened here: no `$BROWSER`, and on Linux and the BSDs no display
/// (`DISPLAY`, `WAYLAND_DISPLAY`) for `xdg-open` to open one on. A login on such a machine
/// takes the device flow where the authorization server offers it.
pub(crate) fn no_browser_here() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("BROWSER") || cfg!(any(target_os = "macos", target_os = "windows")) {
        return false;
    }
    !set("DISPLAY") && !set("WAYLAND_DISPLAY")
}

#[cfg(test)]
mod tests {
    use mcp_host::oauth::Url;

    #[test]
    fn the_code_is_shown_without_the_servers_escape_sequences() {
        let page = Url::parse("https://as.example/device").unwrap();
        let code = "WDJB-\u{1b}]0;owned\u{7}MJHT\u{1b}[2J";
        let text = super::shown("remote", code, (&page, None), 600, false);
        assert!(
            text.contains("open https://as.example/device in a browser on any device and enter the code WDJB-MJHT"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains("owned"),
            "{text:?}"
        );
    }
}
