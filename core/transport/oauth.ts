// Access tokens of an OAuth authorization server, for the HTTP transport (`--authorization-server`). warden is the
// protected resource: it publishes its metadata (RFC 9728) so that a client told 401 can find the authorization
// server, and it accepts a JWT access token (RFC 9068) signed with a key of that server's key set, issued by it, for
// this resource (`--resource`), unexpired, and carrying `--required-scope`. The token's `sub` is the principal. The
// authorization server is asked for its metadata (RFC 8414) and keys on the first such token, never at start-up: a
// server that is down refuses those tokens (503) and nothing else.
import type { JWTVerifyGetKey, JWTVerifyOptions, JWTVerifyResult } from "jose";
import type { AuthorizationSettings } from "../config.ts";
import { messageOf } from "../errors.ts";
import { log } from "../log.ts";

/** Where RFC 9728 puts a protected resource's metadata: this, then the resource's path. */
export const METADATA_PATH = "/.well-known/oauth-protected-resource";

/** The signature algorithms accepted: asymmetric ones, whose keys the authorization server publishes. */
const ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];
/** Clock difference tolerated between warden and the authorization server, for `exp` and `nbf`. */
const CLOCK_TOLERANCE_S = 60;
/** How long a fetch from the authorization server may take. */
const FETCH_TIMEOUT_MS = 5000;
/** After a failed look-up of the keys, how long tokens are refused without asking again. */
const RETRY_AFTER_MS = 10_000;
/** One word, as principals are everywhere else (`--principal`, the tokens file). */
const PRINCIPAL = /^\S{1,200}$/;
/** A JWS in compact form: three base64url parts. */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The URL of the resource's metadata: RFC 9728's well-known path inserted between its origin and its path. */
export function metadataUrl(settings: AuthorizationSettings): string {
  const url = new URL(settings.resource);
  return url.origin + METADATA_PATH + (url.pathname === "/" ? "" : url.pathname);
}

/**
 * The paths the metadata is served at: the one the resource's URL gives (a proxy in front may serve warden's `/mcp`
 * under another), the one warden's own `/mcp` gives, and the bare one, which clients try when the others fail.
 */
export function metadataPaths(settings: AuthorizationSettings, mcpPath: string): ReadonlySet<string> {
  return new Set([new URL(metadataUrl(settings)).pathname, METADATA_PATH + mcpPath, METADATA_PATH]);
}

/** RFC 9728's protected-resource metadata for this server. */
export function protectedResourceMetadata(settings: AuthorizationSettings): Record<string, unknown> {
  return {
    resource: settings.resource,
    authorization_servers: [settings.issuer],
    bearer_methods_supported: ["header"],
    ...(settings.requiredScopes.length > 0 ? { scopes_supported: settings.requiredScopes } : {}),
    resource_name: "warden",
  };
}

/** What a bearer token that is not in the tokens file comes to. */
export type TokenVerdict =
  | { readonly principal: string }
  | {
    readonly principal: null;
    /** 401 for a token that is not good, 403 for one without a required scope, 503 when it cannot be checked now. */
    readonly status: 401 | 403 | 503;
    /** RFC 6750's error code, for the challenge; null on 503. */
    readonly error: "invalid_token" | "insufficient_scope" | null;
    readonly description: string;
  };

const invalid = (description: string): TokenVerdict => ({
  principal: null,
  status: 401,
  error: "invalid_token",
  description,
});

/** jose's error codes for a token that is not good (anything else is a failure to check it). */
const TOKEN_FAULTS: Record<string, string> = {
  ERR_JWT_EXPIRED: "the token has expired",
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: "the token's signature does not verify with the authorization server's key",
  ERR_JWKS_NO_MATCHING_KEY: "the token is not signed with a key of the authorization server's key set",
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: "the token's header matches several keys of the authorization server's key set",
  ERR_JOSE_ALG_NOT_ALLOWED: `the token's algorithm is not one warden accepts (${ALGORITHMS.join(", ")})`,
  ERR_JOSE_NOT_SUPPORTED: "the token uses a form or algorithm warden does not support",
  ERR_JWS_INVALID: "the token is not a well-formed signed JWT",
  ERR_JWT_INVALID: "the token's claims are not a JSON object",
};

/** The authorization server's metadata locations, in the order the MCP authorization spec has clients try them. */
function metadataLocations(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/$/, "");
  return path === ""
    ? [`${url.origin}/.well-known/oauth-authorization-server`, `${url.origin}/.well-known/openid-configuration`]
    : [
      `${url.origin}/.well-known/oauth-authorization-server${path}`,
      `${url.origin}/.well-known/openid-configuration${path}`,
      `${url.origin}${path}/.well-known/openid-configuration`,
    ];
}

/** The `jwks_uri` of the issuer's metadata, which must name the issuer itself (RFC 8414 §3.3). */
async function jwksUri(issuer: string): Promise<URL> {
  const failures: string[] = [];
  for (const location of metadataLocations(issuer)) {
    let response: Response;
    try {
      response = await fetch(location, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
    } catch (error) {
      failures.push(`${location}: ${messageOf(error)}`);
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      failures.push(`${location}: HTTP ${response.status}`);
      continue;
    }
    const metadata = await response.json().catch(() => null) as { issuer?: unknown; jwks_uri?: unknown } | null;
    if (metadata?.issuer !== issuer) {
      throw new Error(
        `${location} names the issuer ${JSON.stringify(metadata?.issuer)}, not ${JSON.stringify(issuer)}`,
      );
    }
    if (typeof metadata.jwks_uri !== "string" || !URL.canParse(metadata.jwks_uri)) {
      throw new Error(`${location} names no jwks_uri`);
    }
    return new URL(metadata.jwks_uri);
  }
  throw new Error(`no metadata for the issuer: ${failures.join("; ")}`);
}

/**
 * Whether the authorization server answers as warden needs it to, for `warden doctor`: metadata naming it, and a key
 * set with a signing key.
 */
export async function authorizationServerCheck(
  settings: AuthorizationSettings,
): Promise<{ readonly ok: boolean; readonly detail: string }> {
  try {
    const uri = await jwksUri(settings.issuer);
    const response = await fetch(uri, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`${uri.href}: HTTP ${response.status}`);
    }
    const set = await response.json().catch(() => null) as { keys?: unknown } | null;
    const keys = Array.isArray(set?.keys)
      ? set.keys.filter((key: { use?: unknown } | null) => key !== null && key.use !== "enc")
      : [];
    if (keys.length === 0) throw new Error(`${uri.href} holds no signing key`);
    return {
      ok: true,
      detail:
        `its metadata names it and ${keys.length} signing key(s) at ${uri.href}; tokens must be for ${settings.resource}`,
    };
  } catch (error) {
    return { ok: false, detail: messageOf(error).split("\n")[0] };
  }
}

/** The scopes a token's claims grant: `scope`, space-separated (RFC 9068), or `scp`, a list (some servers). */
function grantedScopes(claims: Record<string, unknown>): Set<string> {
  const scopes = typeof claims.scope === "string" ? claims.scope.split(" ") : [];
  if (Array.isArray(claims.scp)) scopes.push(...claims.scp.filter((s): s is string => typeof s === "string"));
  else if (typeof claims.scp === "string") scopes.push(...claims.scp.split(" "));
  return new Set(scopes);
}

/** Checks bearer tokens against the authorization server of `settings`; its keys are fetched on first use. */
export function tokenVerifier(settings: AuthorizationSettings): (token: string) => Promise<TokenVerdict> {
  let keys: Promise<JWTVerifyGetKey> | null = null;
  let failedAt = -Infinity;
  let lastFailure = "";
  const keySet = () =>
    keys ??= Promise.all([import("jose"), jwksUri(settings.issuer)]).then(([jose, uri]) =>
      jose.createRemoteJWKSet(uri, { timeoutDuration: FETCH_TIMEOUT_MS })
    );

  const unavailable = (why: string): TokenVerdict => ({
    principal: null,
    status: 503,
    error: null,
    description: `the authorization server's keys cannot be fetched now (${why}); retry later`,
  });

  return async (token) => {
    if (!COMPACT_JWS.test(token)) return invalid("the token is neither in this server's tokens file nor a signed JWT");
    if (performance.now() - failedAt < RETRY_AFTER_MS) return unavailable(lastFailure);
    let getKey: JWTVerifyGetKey;
    try {
      getKey = await keySet();
    } catch (error) {
      // No metadata, or metadata naming another issuer: found again no sooner than RETRY_AFTER_MS from now.
      keys = null;
      failedAt = performance.now();
      lastFailure = messageOf(error).split("\n")[0].slice(0, 300);
      log("warn", "oauth_keys_unavailable", { issuer: settings.issuer, error: lastFailure });
      return unavailable(lastFailure);
    }
    let verified: JWTVerifyResult;
    try {
      verified = await verify(token, getKey, {
        issuer: settings.issuer,
        audience: settings.resource,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ["exp", "sub"],
      });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "ERR_JWT_CLAIM_VALIDATION_FAILED") {
        const claim = (error as { claim?: unknown }).claim;
        return invalid(
          claim === "aud"
            ? "the token is not for this server (its aud does not name --resource)"
            : claim === "iss"
            ? "the token is not from the configured authorization server (its iss)"
            : (error as { reason?: unknown }).reason === "missing"
            ? `the token's ${String(claim)} claim is missing`
            : `the token's ${String(claim)} claim is not valid now (${messageOf(error)})`,
        );
      }
      if (typeof code === "string" && code in TOKEN_FAULTS) return invalid(TOKEN_FAULTS[code]);
      // The key set could not be fetched again (a key id not seen yet): this token cannot be checked now; the keys
      // already held still check the others.
      const why = messageOf(error).split("\n")[0].slice(0, 300);
      log("warn", "oauth_keys_unavailable", { issuer: settings.issuer, error: why });
      return unavailable(why);
    }
    const { payload, protectedHeader } = verified;
    const typ = protectedHeader.typ?.toLowerCase().replace(/^application\//, "");
    if (typ !== undefined && typ !== "jwt" && typ !== "at+jwt") {
      return invalid(`the token is typed ${JSON.stringify(protectedHeader.typ)}, not an access token (at+jwt)`);
    }
    if (typeof payload.sub !== "string" || !PRINCIPAL.test(payload.sub) || !payload.sub.isWellFormed()) {
      return invalid("the token's sub is not a principal warden can record (one word of at most 200 characters)");
    }
    const granted = grantedScopes(payload);
    const missing = settings.requiredScopes.filter((scope) => !granted.has(scope));
    if (missing.length > 0) {
      return {
        principal: null,
        status: 403,
        error: "insufficient_scope",
        description: `the token lacks the scope ${missing.join(" ")}`,
      };
    }
    return { principal: payload.sub };
  };
}

/**
 * jose's check, and where the key set holds several keys the token's header matches (no `kid`, during a rotation),
 * each of them in turn: jose leaves that choice to its caller.
 */
async function verify(token: string, getKey: JWTVerifyGetKey, options: JWTVerifyOptions): Promise<JWTVerifyResult> {
  const { jwtVerify } = await import("jose");
  try {
    return await jwtVerify(token, getKey, options);
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_JWKS_MULTIPLE_MATCHING_KEYS") throw error;
    let last: unknown = error;
    for await (const key of error as unknown as AsyncIterable<CryptoKey>) {
      try {
        return await jwtVerify(token, key, options);
      } catch (failed) {
        if ((failed as { code?: unknown }).code !== "ERR_JWS_SIGNATURE_VERIFICATION_FAILED") throw failed;
        last = failed;
      }
    }
    throw last;
  }
}
