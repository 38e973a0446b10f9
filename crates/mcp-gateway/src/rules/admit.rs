//! The rules applied to a request: what a mode asks before it lists a tool or calls one, for
//! the caller of the request's context.

use std::time::Instant;

use mcp_protocol::schema::CallToolResult;
use mcp_session::RequestContext;

use super::{Verdict, Who, judge, take};
use crate::reply::{ErrorKind, tool_error};
use crate::shared::Shared;

/// Why a call is not made.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The tool is hidden from this caller: the mode answers as for a tool it does not have,
    /// in the words it uses for one, so that the caller cannot tell the two apart.
    Hidden,
    /// Refused by a `deny` rule or a rate limit: the tool error to answer with.
    Refused(CallToolResult),
}

impl Shared {
    /// Whether the caller of `context` sees `server`'s `tool` in its lists.
    pub(crate) fn sees(&self, context: &RequestContext, server: &str, tool: &str) -> bool {
        let caller = crate::auth::caller_of(context).map(Who::from);
        judge(&self.file().rules, caller, server, tool).is_listed()
    }

    /// Whether the caller of `context` sees upstream `server` at all: one of its tools is
    /// listed for it (for an upstream without tools, one the rules would list). Meta mode's
    /// `list-servers` and the server it is asked about follow this.
    pub(crate) fn sees_upstream(&self, context: &RequestContext, server: &str) -> bool {
        let Some(caller) = crate::auth::caller_of(context).map(Who::from) else {
            return true;
        };
        let file = self.file();
        let catalog = self.host.catalog();
        let mut tools = catalog.server_tools(server).peekable();
        if tools.peek().is_none() {
            return judge(&file.rules, Some(caller), server, "").is_listed();
        }
        tools.any(|t| judge(&file.rules, Some(caller), server, &t.tool).is_listed())
    }

    /// Whether the caller of `context` may use upstream `server`'s resources, resource
    /// templates and prompts, which rules do not name: it may when it may call at least one
    /// of the upstream's tools (for an upstream without tools, one the rules would let it
    /// call). A caller denied or hidden the whole upstream, or that no `allow` rule reaches,
    /// neither sees them nor reads them.
    pub(crate) fn may_use_upstream(&self, context: &RequestContext, server: &str) -> bool {
        let Some(caller) = crate::auth::caller_of(context).map(Who::from) else {
            return true;
        };
        let file = self.file();
        let allowed = |tool: &str| {
            matches!(
                judge(&file.rules, Some(caller), server, tool),
                Verdict::Allow(_)
            )
        };
        let catalog = self.host.catalog();
        let mut tools = catalog.server_tools(server).peekable();
        if tools.peek().is_none() {
            return allowed("");
        }
        tools.any(|t| allowed(&t.tool))
    }

    /// Asks the rules whether the caller of `context` may call `server`'s `tool` now, and
    /// counts the call against its rate limit if so. A refusal is logged with the rule.
    pub(crate) async fn admit(
        &self,
        context: &RequestContext,
        label: &str,
        server: &str,
        tool: &str,
    ) -> Result<(), Refusal> {
        let Some(caller) = crate::auth::caller_of(context).map(Who::from) else {
            return Ok(());
        };
        let file = self.file();
        let refused = match judge(&file.rules, Some(caller), server, tool) {
            Verdict::Allow(None) => return Ok(()),
            Verdict::Allow(Some(rule)) => {
                match take(
                    &file.rules,
                    rule,
                    caller,
                    server,
                    tool,
                    &*self.rates,
                    Instant::now(),
                )
                .await
                {
                    Ok(()) => return Ok(()),
                    Err(limited) => {
                        let secs = limited.retry_after_secs();
                        let message = match &limited.unavailable {
                            None => format!(
                                "rule `{}` allows {} calls a minute; retry in {secs} s",
                                limited.rule, limited.calls_per_minute
                            ),
                            // Refused rather than let through uncounted (`RateStore`).
                            Some(why) => format!(
                                "rule `{}` limits calls, and they cannot be counted now ({why}); retry in {secs} s",
                                limited.rule
                            ),
                        };
                        let mut result = tool_error(ErrorKind::RateLimited, &message);
                        if let Some(error) = result
                            .structured_content
                            .as_mut()
                            .and_then(|c| c.get_mut("error"))
                            .and_then(|e| e.as_object_mut())
                        {
                            error.insert("retryAfterSeconds".to_owned(), secs.into());
                        }
                        let why = match &limited.unavailable {
                            None => format!("rate limited by rule `{}`", limited.rule),
                            Some(why) => {
                                format!("refused: rule `{}` cannot count it: {why}", limited.rule)
                            }
                        };
                        (why, result)
                    }
                }
            }
            Verdict::Deny(rule) => (
                format!("refused by rule `{rule}`"),
                tool_error(
                    ErrorKind::PermissionDenied,
                    &format!("rule `{rule}` refuses `{label}` to this caller"),
                ),
            ),
            Verdict::Hide => {
                self.log.call(
                    context.session,
                    server,
                    &format!("call {label} {server}/{tool} hidden by the rules"),
                );
                return Err(Refusal::Hidden);
            }
        };
        let (why, result) = refused;
        self.log.call(
            context.session,
            server,
            &format!("call {label} {server}/{tool} {why}"),
        );
        Err(Refusal::Refused(result))
    }
}
