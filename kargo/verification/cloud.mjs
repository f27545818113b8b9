// Pulumi Cloud's REST API as the verification Job reads it: one stack's update history, its previews, and an
// operation's engine events, on the routes of pulumi-cloud-sdk (github.com/pulumi/pulumi-cloud-sdk/go
// v1.20261110.0 apiclient/stacks_.go: GetStackUpdates, GetLatestStackPreviews, GetStackPreviews,
// GetStackUpdate, GetEngineEvents_update and GetEngineEvents_preview). Anything but the JSON those routes
// document is an error, never an empty answer. Dependency-free: Node's own fetch.

/** Thrown for a page that is an answer but not one of ours: an older stack version with no previews. */
export class NotFound extends Error {}

/**
 * Pulumi Cloud's own 404 (JSON with code 404) for the stack or its latest version: the stack does not exist
 * until PKO's first run creates it, and has no version before its first update. Not an error: wait.
 */
export class NotYet extends Error {}

export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The key of an operation's `environment` that marks a drift check's preview (lib/pipeline/drift.ts
 * DRIFT_CHECK_KEY: the Pulumi CLI records a `PULUMI_*` variable of the workspace as `pulumi.env.<NAME>`).
 */
export const DRIFT_CHECK_KEY = "pulumi.env.PULUMI_PLATFORM_DRIFT_CHECK";

/** Whether an operation Pulumi Cloud lists is a drift check's, never a promotion's. */
export const isDriftCheck = (op) =>
  isObject(op) && isObject(op.environment) && DRIFT_CHECK_KEY in op.environment;

/**
 * The most pages of one operation's events read before giving up: far beyond any stack the platform
 * documents (a page holds hundreds of events), and a bound on a server that keeps answering new tokens.
 */
export const MAX_EVENT_PAGES = 10_000;

/**
 * A client for one stack: `api` the API's base URL, `stack` [organization, project, stack], `token` the
 * access token (sent to `api` only: a redirect is an error), `fetch` for tests.
 */
export function cloudClient({ api, stack, token, fetch = globalThis.fetch, timeoutMs = 10_000 }) {
  const base = `${api.replace(/\/+$/, "")}/api/stacks/${stack.map(encodeURIComponent).join("/")}`;

  /** One JSON answer of the stack's `path`; NotYet for Pulumi Cloud's own 404, NotFound when asked. */
  async function get(path, { missingIsEmpty = false } = {}) {
    const response = await fetch(`${base}/${path}`, {
      headers: { Authorization: `token ${token}`, Accept: "application/vnd.pulumi+8" },
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (missingIsEmpty && response.status === 404) throw new NotFound();
    if (response.status === 404) {
      let answer;
      try {
        answer = JSON.parse(text);
      } catch {
        // Not Pulumi Cloud's answer (a proxy's or a wrong URL's page): an error like any other.
      }
      if (answer?.code === 404) throw new NotYet(`${path}: HTTP 404, ${answer.message ?? "not found"}`);
    }
    if (!response.ok) throw new Error(`HTTP ${response.status} from ${path}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${path} answered HTTP ${response.status} with a body that is not JSON`);
    }
  }

  /**
   * One page of a list (the history, or previews): its `updates`. Pulumi Cloud encodes an empty list as
   * null (a Go nil slice); a missing or non-list `updates` is not its answer.
   */
  async function list(path, options) {
    const body = await get(path, options);
    if (!isObject(body) || !("updates" in body))
      throw new Error(`${path} answered JSON without an updates list`);
    if (body.updates === null) return [];
    if (!Array.isArray(body.updates)) throw new Error(`${path} answered an updates field that is not a list`);
    return body.updates;
  }

  /**
   * Every engine event of a finished operation (`kind` "update" or "preview", its updateID), page after
   * page: GetUpdateEventsResponse's `continuationToken` is null "once all events have been returned and the
   * update is complete". A page that is not that shape, or a token that repeats, is an error.
   */
  async function events(kind, updateID) {
    const path = `${kind}/${encodeURIComponent(updateID)}/events`;
    const all = [];
    const seen = new Set();
    let token;
    for (let pages = 0; pages < MAX_EVENT_PAGES; pages++) {
      const query = token === undefined ? "" : `?continuationToken=${encodeURIComponent(token)}`;
      const body = await get(`${path}${query}`);
      if (!isObject(body) || !("events" in body) || !("continuationToken" in body))
        throw new Error(`${path} answered JSON without events and a continuationToken`);
      if (body.events !== null && !Array.isArray(body.events))
        throw new Error(`${path} answered an events field that is not a list`);
      all.push(...(body.events ?? []));
      if (body.continuationToken === null) return all;
      if (typeof body.continuationToken !== "string" || seen.has(body.continuationToken))
        throw new Error(`${path} answered a continuationToken that is not a new string`);
      seen.add(body.continuationToken);
      token = body.continuationToken;
    }
    throw new Error(`${path} still had more after ${MAX_EVENT_PAGES} pages`);
  }

  return { get, list, events };
}
