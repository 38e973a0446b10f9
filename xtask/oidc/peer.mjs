// The oidc-provider leg's peer (`cargo xtask interop`, xtask/src/oidc.rs): a certified OpenID
// provider (npm `oidc-provider`) with dynamic registration, the device flow, resource
// indicators and PKCE, and in front of it a protected MCP server built on the TypeScript SDK
// that takes only access tokens the provider issued for it (JWTs, checked against the
// provider's keys). The same file drives the provider's own HTML pages in headless Chromium
// (through playwright-core), as the person on the other device would. The same provider,
// configured the same way, is the authorization server that `mcp-host serve --http`'s `auth`
// block trusts in the leg's gateway step (xtask/src/oidc_gateway.rs), and the one the
// conformance suite's authorization-server scenarios judge
// (xtask/src/conformance_authorization.rs).
//
//   node peer.mjs serve AUTH_PORT MCP_PORT [OPTIONS]   runs them until killed; OPTIONS:
//       --gateway URL          also issue tokens for this resource (our gateway's /mcp)
//       --opaque URL           a resource indicator whose tokens are opaque, for the gateway's
//                              audience (its RFC 7662 introspection path); the client
//                              INTROSPECTOR may introspect them
//       --second PORT          a second provider at that port: another issuer, the same keys
//       --mint PORT            a loopback endpoint handing out tokens the gateway must refuse
//       --suite-callback PORT  a pre-registered public client `conformance-suite` whose
//                              redirect URI is the suite's callback at that port
//   node peer.mjs approve URL                 the device flow's pages: confirm the code,
//                                             log in, consent; prints the last page's text
//   node peer.mjs deny URL                    the device flow's confirmation page: abort
//   node peer.mjs browse URL                  the authorization-code flow's pages, up to the
//                                             redirect back to the host; prints its text
//   node peer.mjs knock MINT_URL GATEWAY_URL  sends the gateway each token of the mint (and
//                                             none); prints a JSON object: name -> status and
//                                             WWW-Authenticate
//   node peer.mjs sdk-login GATEWAY_URL       the TypeScript SDK's OAuth client logs in to the
//                                             gateway (pages in Chromium), lists its tools and
//                                             calls `echo`; prints what the call said
//
// xtask copies it next to the packages it installs (target/tools/oidc), so that its imports
// resolve there.

import express from 'express';
import Provider, { errors } from 'oidc-provider';
import {
  SignJWT, createRemoteJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify,
} from 'jose';
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { chromium } from 'playwright-core';

const SCOPE = 'mcp:tools';
// The confidential client that mints, with client credentials, the real tokens the gateway
// must refuse.
const MINTER = { id: 'refusals', secret: 'refusals-only-on-loopback' };
// The confidential client the gateway introspects opaque tokens as (RFC 7662 §2.1); xtask
// gives the gateway its secret through the environment.
const INTROSPECTOR = { id: 'gateway-introspection', secret: 'introspection-only-on-loopback' };
const [mode, ...args] = process.argv.slice(2);

if (mode === 'serve') {
  await serve(Number(args[0]), Number(args[1]), options(args.slice(2)));
} else if (mode === 'knock') {
  await knock(args[0], args[1]);
} else if (mode === 'sdk-login') {
  await sdkLogin(args[0]);
} else if (mode === 'approve' || mode === 'browse') {
  await drive(args[0], mode === 'approve');
} else if (mode === 'deny') {
  await drive(args[0], true, true);
} else {
  console.error('usage: see the head of peer.mjs');
  process.exit(2);
}

// `serve`'s options: `--name value` pairs.
function options(list) {
  const found = {};
  for (let i = 0; i + 1 < list.length; i += 2) {
    found[list[i].replace(/^--/, '')] = list[i + 1];
  }
  return found;
}

// The provider's configuration, for `issuer`: tokens are JWTs signed with `jwk`, for the
// resources of `audiences` alone (resource indicators), but for `opaque` (an indicator whose
// tokens are opaque, with the audience `opaque.audience`); `clients` are registered beforehand.
function providerFor(issuer, jwk, audiences, clients, opaque) {
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    clients,
    cookies: { keys: ['oidc-peer-cookie-key'] },
    scopes: ['openid', 'offline_access', SCOPE],
    pkce: { required: () => true },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      // For the gateway's opaque tokens (RFC 7662).
      introspection: { enabled: true },
      deviceFlow: { enabled: true },
      // For the tokens the gateway must refuse (another resource's, another issuer's).
      clientCredentials: { enabled: true },
      // The conformance suite's authorization-server metadata scenario asks for it (MCP
      // 2025-11-25 client ID metadata documents); nothing of ours uses it here.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      // On, as by default: the provider offers DPoP while the SDK's bearer middleware takes
      // `Bearer` tokens only and challenges with `Bearer` alone, so mcp-host must not bind
      // its tokens to a key here (it binds only where the resource says it takes DPoP).
      dPoP: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Tokens only for the resources we serve, as JWTs they check themselves.
        getResourceServerInfo: async (_ctx, indicator) => {
          if (opaque && indicator === opaque.indicator) {
            return {
              scope: SCOPE,
              audience: opaque.audience,
              accessTokenTTL: 3600,
              accessTokenFormat: 'opaque',
            };
          }
          if (!audiences.includes(indicator)) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          return {
            scope: SCOPE,
            audience: indicator,
            accessTokenTTL: 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });
  // An authorization request without `scope` gets the resources' scope, the pre-defined
  // default RFC 6749 §3.3 allows (the conformance suite's authorization-code scenario sends
  // none; without a default the provider grants nothing and answers access_denied).
  provider.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/auth' && !ctx.query.scope) {
      ctx.query = { ...ctx.query, scope: SCOPE };
    }
    await next();
  });
  return provider;
}

async function serve(authPort, mcpPort, opts) {
  const issuer = `http://127.0.0.1:${authPort}`;
  const resource = `http://127.0.0.1:${mcpPort}/mcp`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'peer-1', alg: 'RS256', use: 'sig' };
  const audiences = [resource, ...(opts.gateway ? [opts.gateway] : [])];
  const clients = [
    {
      client_id: MINTER.id,
      client_secret: MINTER.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    },
    {
      client_id: INTROSPECTOR.id,
      client_secret: INTROSPECTOR.secret,
      grant_types: [],
      redirect_uris: [],
      response_types: [],
    },
  ];
  const opaque = opts.opaque && opts.gateway
    ? { indicator: opts.opaque, audience: opts.gateway } : undefined;
  if (opts['suite-callback']) {
    // The conformance suite's authorization-code scenario: a public client with PKCE whose
    // redirect URI is the suite's loopback callback.
    clients.push({
      client_id: 'conformance-suite',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: [`http://127.0.0.1:${opts['suite-callback']}/callback`],
    });
  }
  const provider = providerFor(issuer, jwk, audiences, clients, opaque);
  provider.listen(authPort, '127.0.0.1');

  // The MCP server: RFC 9728 metadata naming the provider, and bearer tokens checked against
  // the provider's keys, its issuer and this resource.
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  const verifier = {
    verifyAccessToken: async (token) => {
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer,
          audience: resource,
          typ: 'at+jwt',
        });
        return {
          token,
          clientId: String(payload.client_id),
          scopes: String(payload.scope ?? '').split(' ').filter(Boolean),
          expiresAt: payload.exp,
          resource: new URL(resource),
        };
      } catch (e) {
        throw new InvalidTokenError(`token refused: ${e.code ?? e.message}`);
      }
    },
  };
  const metadataPath = '/.well-known/oauth-protected-resource/mcp';
  const app = express();
  app.use(express.json());
  app.get(metadataPath, (_req, res) => {
    res.json({
      resource,
      authorization_servers: [issuer],
      scopes_supported: [SCOPE],
      bearer_methods_supported: ['header'],
    });
  });
  const auth = requireBearerAuth({
    verifier,
    requiredScopes: [SCOPE],
    resourceMetadataUrl: `http://127.0.0.1:${mcpPort}${metadataPath}`,
  });
  app.post('/mcp', auth, async (req, res) => {
    const server = new McpServer({ name: 'oidc-protected', version: '1.0.0' });
    server.tool('whoami', 'Says who the token was issued to.', async (extra) => ({
      content: [
        {
          type: 'text',
          text: `client ${extra.authInfo?.clientId} with scope ${extra.authInfo?.scopes.join(' ')}`,
        },
      ],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  for (const method of ['get', 'delete']) {
    app[method]('/mcp', auth, (_req, res) => res.status(405).set('Allow', 'POST').end());
  }
  app.listen(mcpPort, '127.0.0.1');
  console.error(`oidc-provider at ${issuer}, MCP server at ${resource}`);

  // Another issuer with the same keys: its tokens verify against the first one's key set,
  // and only their issuer tells them apart.
  let second;
  if (opts.second) {
    second = `http://127.0.0.1:${opts.second}`;
    providerFor(second, jwk, audiences, clients).listen(Number(opts.second), '127.0.0.1');
    console.error(`a second issuer, with the same keys, at ${second}`);
  }
  if (opts.mint && opts.gateway) {
    const mint = express();
    mint.get('/tokens', async (_req, res, next) => {
      try {
        res.json(await refusedTokens(issuer, second, resource, opts.gateway, privateKey, opaque));
      } catch (e) {
        next(e);
      }
    });
    mint.listen(Number(opts.mint), '127.0.0.1');
  }
}

// A client-credentials access token from the provider at `at` for `indicator`.
async function clientCredentials(at, indicator, scope = SCOPE) {
  const response = await fetch(`${at}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${MINTER.id}:${MINTER.secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      resource: indicator,
      ...(scope ? { scope } : {}),
    }).toString(),
  });
  const body = await response.json();
  if (!response.ok || typeof body.access_token !== 'string') {
    throw new Error(`${at}/token for ${indicator}: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.access_token;
}

// The tokens for the gateway's checks: `valid` (the provider's, for the gateway, which it must
// take), and the ones it must refuse. Real ones where the provider makes them: `audience`
// (for the TypeScript peer's resource), `issuer` (from the second provider, same keys). Forged
// from a valid one where it does not: `expired` (re-signed with the provider's own key, its
// times an hour in the past), `none` (`alg: none`, no signature), `key` (signed with another
// key under the provider's key id). And `scopeless`, the provider's token for the gateway
// without the scope the gateway requires. With `opaque`, the provider's opaque tokens for the
// gateway, which it introspects: `opaque` (taken), `opaqueRevoked` (revoked at the provider
// first: inactive), `opaqueScopeless` (without the scope).
async function refusedTokens(issuer, second, peerResource, gateway, privateKey, opaque) {
  const valid = await clientCredentials(issuer, gateway);
  const claims = decodeJwt(valid);
  const header = { alg: 'RS256', typ: 'at+jwt', kid: 'peer-1' };
  const now = Math.floor(Date.now() / 1000);
  const expired = await new SignJWT({ ...claims, iat: now - 7200, exp: now - 3600 })
    .setProtectedHeader(header)
    .sign(privateKey);
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const none = `${b64({ alg: 'none', typ: 'at+jwt', kid: 'peer-1' })}.${b64(claims)}.`;
  const other = await generateKeyPair('RS256');
  const key = await new SignJWT(claims).setProtectedHeader(header).sign(other.privateKey);
  const tokens = {
    valid,
    expired,
    audience: await clientCredentials(issuer, peerResource),
    none,
    key,
  };
  if (second) tokens.issuer = await clientCredentials(second, gateway);
  // The provider's token for the gateway without the scope it requires (403, not 401).
  tokens.scopeless = await clientCredentials(issuer, gateway, '');
  if (opaque) {
    tokens.opaque = await clientCredentials(issuer, opaque.indicator);
    if (tokens.opaque.split('.').length === 3) {
      throw new Error('the provider made a JWT where an opaque token was configured');
    }
    tokens.opaqueRevoked = await clientCredentials(issuer, opaque.indicator);
    const revoked = await fetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${MINTER.id}:${MINTER.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: tokens.opaqueRevoked }).toString(),
    });
    if (!revoked.ok) throw new Error(`revocation: ${revoked.status}`);
    tokens.opaqueScopeless = await clientCredentials(issuer, opaque.indicator, '');
  }
  return tokens;
}

// `knock`: each token of the mint, and no token at all, in an initialize POST to the gateway.
async function knock(mintUrl, gateway) {
  const tokens = await (await fetch(mintUrl)).json();
  const seen = {};
  for (const [name, token] of [['missing', undefined], ...Object.entries(tokens)]) {
    const response = await fetch(gateway, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'oidc-knock', version: '1.0.0' },
        },
      }),
    });
    seen[name] = {
      status: response.status,
      wwwAuthenticate: response.headers.get('www-authenticate'),
    };
    await response.body?.cancel();
  }
  // The RFC 9728 document the challenge points to.
  const named = /resource_metadata="([^"]+)"/.exec(seen.missing.wwwAuthenticate ?? '');
  if (named) seen.metadata = await (await fetch(named[1])).json();
  console.log(JSON.stringify(seen));
}

// `sdk-login`: the TypeScript SDK's OAuth client against the gateway. Its provider keeps
// everything in memory; its redirect is driven in Chromium through the provider's pages to a
// loopback callback of ours, whose code finishes the login.
async function sdkLogin(gateway) {
  const callback = http.createServer();
  await new Promise((resolve) => callback.listen(0, '127.0.0.1', resolve));
  const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;
  const code = new Promise((resolve, reject) => {
    callback.on('request', (req, res) => {
      const url = new URL(req.url, redirectUrl);
      res.end('You may close this page.');
      const got = url.searchParams.get('code');
      if (got) resolve(got);
      else reject(new Error(`the callback came without a code: ${url.search}`));
    });
  });
  const saved = {};
  const authProvider = {
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata() {
      return {
        client_name: 'oidc-peer SDK client',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      };
    },
    clientInformation: () => saved.client,
    saveClientInformation: (client) => {
      saved.client = client;
    },
    tokens: () => saved.tokens,
    saveTokens: (tokens) => {
      saved.tokens = tokens;
    },
    redirectToAuthorization: async (url) => {
      saved.redirected = url.toString();
    },
    saveCodeVerifier: (verifier) => {
      saved.verifier = verifier;
    },
    codeVerifier: () => saved.verifier,
  };
  const connect = async () => {
    const client = new Client({ name: 'oidc-peer-sdk', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway), { authProvider }));
    return client;
  };
  try {
    let client;
    try {
      client = await connect();
      throw new Error('the gateway took the SDK client without a login');
    } catch (e) {
      if (!(e instanceof UnauthorizedError) || !saved.redirected) throw e;
    }
    const resource = new URL(saved.redirected).searchParams.get('resource');
    await drive(saved.redirected, false);
    const transport = new StreamableHTTPClientTransport(new URL(gateway), { authProvider });
    await transport.finishAuth(await code);
    client = await connect();
    const { tools } = await client.listTools();
    const echo = tools.find((t) => t.name.endsWith('echo'));
    if (!echo) throw new Error(`no echo tool through the gateway: ${tools.map((t) => t.name)}`);
    const result = await client.callTool({ name: echo.name, arguments: { text: 'from the SDK' } });
    await client.close();
    console.log(JSON.stringify({
      resource,
      token: decodeJwt(saved.tokens.access_token).aud,
      said: result.content?.[0]?.text,
    }));
  } finally {
    callback.close();
  }
}

// What to click on the provider's page, after filling what it asks for; `undefined` at the
// end of its pages.
async function nextButton(page, deny) {
  if (await page.$('form[id="op.deviceConfirmForm"]')) {
    return deny ? 'button[name="abort"]' : 'button[autofocus]';
  }
  if (await page.$('input[name="user_code"]')) {
    // Where an aborted confirmation lands; otherwise the code was not taken from the address.
    if (deny) return undefined;
    throw new Error('the code was not filled in from the address');
  }
  if (await page.$('input[name="login"]')) {
    await page.fill('input[name="login"]', 'alice');
    await page.fill('input[name="password"]', 'any password');
    return 'button[type="submit"]';
  }
  if (await page.$('input[name="prompt"][value="consent"]')) {
    return 'button[type="submit"]';
  }
  return undefined;
}

// Goes through the provider's pages from `url` as a person would: the device flow's code
// confirmation, the development login (any login, any password), the consent; for the
// authorization-code flow (`device` false) until the browser leaves the provider for the
// host's redirect; with `deny`, the device flow's confirmation is aborted instead. Prints the
// text of the page it ends on.
async function drive(url, device, deny = false) {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage();
    await page.goto(url, { waitUntil: 'domcontentloaded' });
    const origin = new URL(url).origin;
    for (let step = 0; step < 20; step += 1) {
      await page.waitForLoadState('load');
      const on = new URL(page.url());
      if (!device && on.origin !== origin) break;
      let button;
      try {
        button = await nextButton(page, deny);
      } catch (e) {
        // The page navigated while it was being read (a redirect chain): read the next one.
        if (/context was destroyed|navigat/i.test(String(e))) continue;
        throw e;
      }
      if (!button) break;
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(button)]);
    }
    const text = (await page.textContent('body')) ?? '';
    console.log(`${page.url()}\n${text.replace(/\s+/g, ' ').trim()}`);
  } finally {
    await browser.close();
  }
}
