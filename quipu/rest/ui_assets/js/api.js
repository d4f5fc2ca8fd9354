// Calls to quipu's REST routes. The explorer lives at <server>/ui/, so the routes are one level up,
// which keeps it working behind a reverse proxy that mounts the server under a prefix.
//
// A bearer token is held in this module's memory only: never in localStorage, a cookie or the
// URL, so closing the tab forgets it. The explorer never asks for one unless a read is refused.

const BASE = new URL("../../", import.meta.url);
let token = null;

export function setToken(value) {
  token = value && value.trim() ? value.trim() : null;
}

export function hasToken() {
  return token !== null;
}

// A refused or failed call, carrying the server's problem document (status, reason, detail).
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.error || problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// Called with every refused credential, so the page can ask for a token.
let onUnauthorised = () => {};
export function whenUnauthorised(callback) {
  onUnauthorised = callback;
}

export async function call(method, path, { body, params, accept = "application/json", signal } = {}) {
  const url = new URL(path.replace(/^\//, ""), BASE);
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, String(value));
  }
  const headers = { Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    credentials: "omit",
  });
  if (!response.ok) {
    let problem = { title: response.statusText };
    try {
      problem = await response.json();
    } catch {
      // not a problem document: keep the status text
    }
    if (response.status === 401) onUnauthorised(problem);
    throw new ApiError(response.status, problem);
  }
  return response.json();
}

export const get = (path, options) => call("GET", path, options);
export const post = (path, body, options) => call("POST", path, { ...options, body });
