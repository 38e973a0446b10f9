// The oidc-provider leg's peer (`cargo xtask interop`, xtask/src/oidc.rs): a certified OpenID
// provider (npm `oidc-provider`) with dynamic registration, the device flow, resource
// indicators and PKCE, and in front of it a protected MCP server built on the TypeScript SDK
// that takes only access tokens the provider issued for it (JWTs, checked against the
// provider's keys). The same file drives the provider's own HTML pages in headless Chromium
// (through playwright-core), as the person on the other device would.
//
//   node peer.mjs serve AUTH_PORT MCP_PORT   runs both until killed
//   node peer.mjs approve URL                 the device flow's pages: confirm the code,
//                                             log in, consent; prints the last page's text
//   node peer.mjs deny URL                    the device flow's confirmation page: abort
//   node peer.mjs browse URL                  the authorization-code flow's pages, up to the
//                                             redirect back to the host; prints its text
//
// xtask copies it next to the packages it installs (target/tools/oidc), so that its imports
// resolve there.

import express from 'express';
import Provider, { errors } from 'oidc-provider';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { chromium } from 'playwright-core';

const SCOPE = 'mcp:tools';
const [mode, ...args] = process.argv.slice(2);

if (mode === 'serve') {
  await serve(Number(args[0]), Number(args[1]));
} else if (mode === 'approve' || mode === 'browse') {
  await drive(args[0], mode === 'approve');
} else if (mode === 'deny') {
  await drive(args[0], true, true);
} else {
  console.error('usage: peer.mjs serve AUTH_PORT MCP_PORT | approve URL | browse URL');
  process.exit(2);
}

async function serve(authPort, mcpPort) {
  const issuer = `http://127.0.0.1:${authPort}`;
  const resource = `http://127.0.0.1:${mcpPort}/mcp`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'peer-1', alg: 'RS256', use: 'sig' };

  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    cookies: { keys: ['oidc-peer-cookie-key'] },
    scopes: ['openid', 'offline_access', SCOPE],
    pkce: { required: () => true },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      deviceFlow: { enabled: true },
      // On, as by default: the provider offers DPoP while the SDK's bearer middleware takes
      // `Bearer` tokens only and challenges with `Bearer` alone, so mcp-host must not bind
      // its tokens to a key here (it binds only where the resource says it takes DPoP).
      dPoP: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Tokens only for our MCP server, as JWTs it checks itself.
        getResourceServerInfo: async (_ctx, indicator) => {
          if (indicator !== resource) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          return {
            scope: SCOPE,
            audience: resource,
            accessTokenTTL: 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });
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
