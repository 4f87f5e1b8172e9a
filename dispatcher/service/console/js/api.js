// The console's only way to the service: the public JSON API (docs/api.md) with the key or
// admin token the user pasted, kept in sessionStorage (gone when the tab closes).

const TOKEN_KEY = 'relay-egress.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  if (value) {
    sessionStorage.setItem(TOKEN_KEY, value);
  } else {
    sessionStorage.removeItem(TOKEN_KEY);
  }
}

// An answer other than 2xx: `status`, the API's envelope in `body` ({error, message, field}).
export class ApiError extends Error {
  constructor(status, body) {
    const message = body && typeof body === 'object' && body.message ? body.message
      : `HTTP ${status}`;
    super(message);
    this.status = status;
    this.body = body && typeof body === 'object' ? body : {};
  }
}

// One call; resolves to the parsed body (text for non-JSON answers), rejects with ApiError.
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { error: 'unreachable', message: 'the service does not answer' });
  }
  const text = await res.text();
  let data = text;
  if ((res.headers.get('Content-Type') || '').startsWith('application/json')) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      data = text;
    }
  }
  if (!res.ok) {
    throw new ApiError(res.status, data);
  }
  return data;
}

// The platforms a /v1/stats answer names, in its order: `platforms` (every platform the node
// delivers to, profile platforms included), else the keys of `platform_429s_by_platform` (an
// older service), else the compiled-in four (a tenant key's stats name none).
export function platformsOf(stats) {
  if (stats && Array.isArray(stats.platforms) && stats.platforms.length) {
    return stats.platforms.map(String);
  }
  const by = stats && stats.platform_429s_by_platform;
  if (by && typeof by === 'object' && Object.keys(by).length) {
    return Object.keys(by);
  }
  return ['slack', 'discord', 'line', 'webhook'];
}

// A query string from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') {
      q.set(k, String(v));
    }
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
