//! How a client session finds the era its server speaks (SPEC-2026 §2): the
//! `server/discover` probe and what its answer decides, and the `initialize` handshake it
//! falls back to.

use super::*;

impl ClientSession {
    pub(super) fn start_initialize(
        &mut self,
        now: Instant,
        offered: ProtocolVersion,
    ) -> Result<RequestId, Error> {
        let id = self.send_initialize(now, offered.clone())?;
        self.state = State::Initializing {
            id: id.clone(),
            offered,
            retried: false,
        };
        Ok(id)
    }

    /// Sends `server/discover` stamped with `version`. While a handshake-era fallback is
    /// possible it waits only [`ClientConfig::probe_timeout`], and never longer than any
    /// request may wait ([`ClientConfig::request_timeout`]): a host told to give up on a
    /// server after 1 s must not spend 10 s finding out that it ignores the probe.
    pub(super) fn probe(
        &mut self,
        now: Instant,
        version: ProtocolVersion,
        retried: bool,
    ) -> Result<RequestId, Error> {
        let timeout = if self.config.handshake_offer().is_some() {
            self.config.probe_timeout.min(self.config.request_timeout)
        } else {
            self.config.request_timeout
        };
        let envelope = self.envelope(&version);
        let id = self.core.send_request(
            now,
            <method::Discover as RequestMethod>::METHOD,
            None,
            RequestOptions::DEFAULT.timeout(timeout),
            self.config.request_timeout,
            Some(&envelope),
        )?;
        self.state = State::Discovering {
            id: id.clone(),
            offered: version,
            retried,
        };
        Ok(id)
    }

    pub(super) fn send_initialize(
        &mut self,
        now: Instant,
        version: ProtocolVersion,
    ) -> Result<RequestId, Error> {
        let params = InitializeParams::new(
            version,
            self.config.capabilities.clone(),
            self.config.client_info.clone(),
        );
        let params = RawJson::encode(&params).map_err(|e| Error::ApiMisuse(e.to_string()))?;
        self.core.send_request(
            now,
            <method::Initialize as RequestMethod>::METHOD,
            Some(params),
            RequestOptions::DEFAULT,
            self.config.request_timeout,
            None,
        )
    }

    /// The answer to the `server/discover` probe decides the era (SPEC-2026 §2).
    pub(super) fn finish_discover(&mut self, now: Instant, outcome: Result<RawJson, Error>) {
        let State::Discovering {
            offered, retried, ..
        } = &self.state
        else {
            return;
        };
        let (offered, retried) = (offered.clone(), *retried);
        let stateless: Vec<ProtocolVersion> = self.config.speaks(Era::Stateless).cloned().collect();
        match outcome {
            Ok(raw) => {
                let result: DiscoverResult = match raw.decode() {
                    Ok(result) => result,
                    Err(e) => {
                        // Said as it is: "listed no version" would send the reader looking
                        // for a version list the answer never had.
                        return self.fall_back(
                            now,
                            format!("server/discover answered with a malformed result ({e})"),
                        );
                    }
                };
                let listed = result.supported_versions.clone().unwrap_or_default();
                match ProtocolVersion::best_mutual(listed.iter().map(String::as_str), &stateless) {
                    Some(version) => self.operate_stateless(result, version),
                    None => self.fall_back(
                        now,
                        format!(
                            "server/discover listed no 2026-07-28-era version ({})",
                            if listed.is_empty() {
                                "none".to_owned()
                            } else {
                                listed.join(", ")
                            }
                        ),
                    ),
                }
            }
            Err(Error::Rpc { method, error }) => match error.code {
                code::UNSUPPORTED_PROTOCOL_VERSION => {
                    let listed = supported_versions(error.data.as_ref());
                    let handshake: Vec<ProtocolVersion> =
                        self.config.speaks(Era::Handshake).cloned().collect();
                    if let Some(version) =
                        ProtocolVersion::best_mutual(listed.iter().copied(), &stateless)
                        && !retried
                    {
                        self.negotiation =
                            format!("server/discover with {offered} was refused (-32022); ");
                        if let Err(e) = self.probe(now, version, true) {
                            self.close_with(e);
                        }
                    } else if let Some(version) =
                        ProtocolVersion::best_mutual(listed.iter().copied(), &handshake)
                    {
                        let why = format!(
                            "server/discover: the server supports only {}",
                            listed.join(", ")
                        );
                        self.fall_back_to(now, why, Some(version));
                    } else {
                        self.close_with(Error::Rpc { method, error });
                    }
                }
                // A stateless server that refused this request: falling back would hide why.
                code::HEADER_MISMATCH | code::MISSING_REQUIRED_CLIENT_CAPABILITY => {
                    self.close_with(Error::Rpc { method, error });
                }
                other => self.fall_back(
                    now,
                    format!("server/discover failed ({other} {})", error.message),
                ),
            },
            Err(Error::Timeout { waited_ms, .. }) => self.fall_back(
                now,
                format!("no answer to server/discover within {waited_ms} ms"),
            ),
            Err(other) => self.close_with(other),
        }
    }

    /// The server is not a stateless one: `initialize`, if the client speaks the handshake
    /// era; otherwise the session ends with why.
    pub(super) fn fall_back(&mut self, now: Instant, why: String) {
        self.fall_back_to(now, why, None);
    }

    /// [`fall_back`](Self::fall_back), offering `version` when the server named the ones it
    /// speaks.
    pub(super) fn fall_back_to(
        &mut self,
        now: Instant,
        why: String,
        version: Option<ProtocolVersion>,
    ) {
        match version.or_else(|| self.config.handshake_offer()) {
            Some(version) => {
                self.negotiation = format!("{why}; ");
                if let Err(e) = self.start_initialize(now, version) {
                    self.close_with(e);
                }
            }
            None => self.close_with(Error::Protocol(format!(
                "{why}, and the client is configured to speak only the 2026-07-28 era"
            ))),
        }
    }

    pub(super) fn operate_stateless(&mut self, result: DiscoverResult, version: ProtocolVersion) {
        let how = if self.negotiation.is_empty() {
            format!("server/discover listed {version}")
        } else if self.negotiation.ends_with("; ") {
            format!("{}server/discover listed {version}", self.negotiation)
        } else {
            self.negotiation.clone()
        };
        let implementation = result
            .implementation()
            .unwrap_or_else(|| Implementation::new(String::new(), String::new()));
        let info = ServerInfo {
            protocol_version: version,
            capabilities: result.capabilities.unwrap_or_default(),
            implementation,
            instructions: result.instructions,
            era: Era::Stateless,
            negotiation: how,
        };
        self.era = Era::Stateless;
        self.state = State::Operating(Box::new(info.clone()));
        self.events.push_back(ClientEvent::Ready(info));
    }

    pub(super) fn finish_initialize(&mut self, now: Instant, outcome: Result<RawJson, Error>) {
        let State::Initializing {
            offered, retried, ..
        } = &self.state
        else {
            return;
        };
        let (offered, retried) = (offered.clone(), *retried);
        let raw = match outcome {
            Ok(raw) => raw,
            Err(Error::Rpc { method, error }) => {
                // A server that does not support our version may list the ones it does.
                let mutual = ProtocolVersion::best_mutual(
                    supported_versions(error.data.as_ref()),
                    &self.config.supported_versions,
                );
                match mutual {
                    // Only a stateless server names a stateless version: probe it, once.
                    Some(version) if version.era() == Some(Era::Stateless) && !self.reprobed => {
                        self.reprobed = true;
                        self.negotiation = format!(
                            "{}initialize was refused with -32022 naming {version}; ",
                            self.negotiation
                        );
                        if let Err(e) = self.probe(now, version, true) {
                            self.close_with(e);
                        }
                    }
                    Some(version) if !retried && version != offered => {
                        match self.send_initialize(now, version.clone()) {
                            Ok(id) => {
                                self.state = State::Initializing {
                                    id,
                                    offered: version,
                                    retried: true,
                                };
                            }
                            Err(e) => self.close_with(e),
                        }
                    }
                    _ => self.close_with(Error::Rpc { method, error }),
                }
                return;
            }
            Err(other) => return self.close_with(other),
        };
        let result: InitializeResult = match raw.decode() {
            Ok(result) => result,
            Err(e) => {
                return self.close_with(Error::InvalidResult {
                    method: "initialize".to_owned(),
                    detail: e.to_string(),
                });
            }
        };
        if !ProtocolVersion::client_accepts(
            &result.protocol_version,
            &self.config.supported_versions,
        ) || result.protocol_version.era() != Some(Era::Handshake)
        {
            return self.close_with(Error::VersionMismatch {
                requested: offered,
                offered: result.protocol_version,
            });
        }
        let info = ServerInfo {
            negotiation: format!(
                "{}initialize agreed on {}",
                self.negotiation, result.protocol_version
            ),
            protocol_version: result.protocol_version,
            capabilities: result.capabilities,
            implementation: result.server_info,
            instructions: result.instructions,
            era: Era::Handshake,
        };
        self.core
            .outbox
            .push_back(Message::Notification(Notification {
                method: <method::Initialized as NotificationMethod>::METHOD.to_owned(),
                params: None,
            }));
        self.state = State::Operating(Box::new(info.clone()));
        self.events.push_back(ClientEvent::Ready(info));
    }
}
