//! Whether an authorization server refuses an authorization request before a person could
//! see it, read from its answer to the request sent without a browser.
//!
//! A client registration kept from an earlier login may be unknown to the authorization
//! server by now (one that keeps registrations in memory and restarted, or one that expired
//! them), or hold other redirect URIs than the login sends. Such a server answers the
//! authorization request with an error page the browser shows and never comes back from
//! (RFC 6749 §4.1.2.1: a bad `client_id` or `redirect_uri` is not redirected), or with a
//! redirect that carries the error. Before a reused registration sends a person there, the
//! [`Authorizer`](crate::Authorizer) asks once itself; a refusal for the client's sake means
//! "register again", anything else (a login page, a redirect with a code, a 404 to a request
//! without cookies) means "go on".

use url::Url;

use crate::error::cut_short;
use crate::flow::RawError;

/// The error codes that blame the client or its redirect URI: a new registration may help.
const CLIENT_ERRORS: [&str; 3] = ["invalid_client", "unauthorized_client", "invalid_request"];

/// The authorization server's reason, cut short, when its answer (`status`, its `Location`,
/// its `body`) to the authorization request refuses the client: a 400 or 401 whose JSON body
/// names one of the client errors, or a redirect to `redirect_uri` whose query does.
pub(crate) fn refusal(
    status: u16,
    location: Option<&str>,
    body: &[u8],
    redirect_uri: &str,
) -> Option<String> {
    let described = |error: &str, description: Option<&str>| {
        CLIENT_ERRORS
            .contains(&error)
            .then(|| cut_short(format!("{error} {}", description.unwrap_or_default()).trim_end()))
    };
    match status {
        400 | 401 => {
            let e: RawError = serde_json::from_slice(body).ok()?;
            described(&e.error, e.error_description.as_deref())
        }
        300..=399 => {
            let landed = Url::parse(location?).ok()?;
            let expected = Url::parse(redirect_uri).ok()?;
            let same = landed.scheme() == expected.scheme()
                && landed.host() == expected.host()
                && landed.port_or_known_default() == expected.port_or_known_default()
                && landed.path() == expected.path();
            if !same {
                return None;
            }
            let get = |name: &str| {
                landed
                    .query_pairs()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
            };
            described(&get("error")?, get("error_description").as_deref())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;

    const REDIRECT: &str = "http://127.0.0.1:40845/callback";

    #[test]
    fn client_errors_refuse_and_the_rest_goes_on() {
        let json = |v: &str| v.as_bytes().to_vec();
        let refused = [
            // The TypeScript SDK's authorization handler for an unknown client.
            (
                400,
                None,
                json(r#"{"error":"invalid_client","error_description":"Invalid client_id"}"#),
                "invalid_client Invalid client_id",
            ),
            (
                401,
                None,
                json(r#"{"error":"unauthorized_client"}"#),
                "unauthorized_client",
            ),
            // Its demo provider for a redirect URI registered with another port.
            (
                302,
                Some(
                    "http://127.0.0.1:40845/callback?error=invalid_request&error_description=Unregistered+redirect_uri&state=s",
                ),
                Vec::new(),
                "invalid_request Unregistered redirect_uri",
            ),
        ];
        for (status, location, body, reason) in refused {
            assert_eq!(
                refusal(status, location, &body, REDIRECT).as_deref(),
                Some(reason),
                "{status} {location:?}"
            );
        }
        let going_on = [
            // A login page, a redirect with a code, a redirect to a login page, a 404.
            (200, None, json("<html>log in</html>")),
            (
                302,
                Some("http://127.0.0.1:40845/callback?code=c&state=s"),
                Vec::new(),
            ),
            (
                302,
                Some("https://as.example/login?error=invalid_request"),
                Vec::new(),
            ),
            (404, None, json("{}")),
            // Errors that a new registration would not mend.
            (400, None, json(r#"{"error":"invalid_scope"}"#)),
            (
                302,
                Some("http://127.0.0.1:40845/callback?error=access_denied&state=s"),
                Vec::new(),
            ),
            // Another port is another redirect URI.
            (
                302,
                Some("http://127.0.0.1:40846/callback?error=invalid_request"),
                Vec::new(),
            ),
            (400, None, json("<html>bad request</html>")),
        ];
        for (status, location, body) in going_on {
            assert_eq!(
                refusal(status, location, &body, REDIRECT),
                None,
                "{status} {location:?}"
            );
        }
    }
}
