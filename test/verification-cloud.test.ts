// The verification Job's Pulumi Cloud client (kargo/verification/cloud.mjs) against answers given in process:
// the paging of engine events, and every answer that is not Pulumi Cloud's JSON. The Go harness serves the
// same from the official pulumi-cloud-sdk types (test/analysis/pulumicloud.go).
import { expect, it } from "vitest";
import { cloudClient, NotFound, NotYet } from "../kargo/verification/cloud.mjs";

type Answer = { status?: number; body: unknown };
function server(answer: (url: URL) => Answer) {
  const urls: string[] = [];
  const fetch = (async (input: string, init: RequestInit) => {
    const url = new URL(input);
    urls.push(url.pathname + url.search);
    expect((init.headers as Record<string, string>).Authorization).toBe("token t");
    expect(init.redirect).toBe("error");
    const a = answer(url);
    const text = typeof a.body === "string" ? a.body : JSON.stringify(a.body);
    return new Response(text, { status: a.status ?? 200 });
  }) as unknown as typeof globalThis.fetch;
  const client = cloudClient({
    api: "https://api.example.com/",
    stack: ["org", "my project", "dev"],
    token: "t",
    fetch,
  });
  return { client, urls };
}

it("reads every page of an operation's events, following continuationToken until it is null", async () => {
  const pages: Record<string, { events: unknown[] | null; continuationToken: string | null }> = {
    "": { events: [{ type: "preludeEvent" }], continuationToken: "a/b+c" },
    "a/b+c": { events: null, continuationToken: "2" },
    "2": { events: [{ type: "summaryEvent" }, { type: "x" }], continuationToken: null },
  };
  const { client, urls } = server((u) => ({ body: pages[u.searchParams.get("continuationToken") ?? ""] }));
  expect(await client.events("preview", "id 1")).toEqual([
    { type: "preludeEvent" },
    { type: "summaryEvent" },
    { type: "x" },
  ]);
  expect(urls).toEqual([
    "/api/stacks/org/my%20project/dev/preview/id%201/events",
    "/api/stacks/org/my%20project/dev/preview/id%201/events?continuationToken=a%2Fb%2Bc",
    "/api/stacks/org/my%20project/dev/preview/id%201/events?continuationToken=2",
  ]);
  const { client: c2, urls: u2 } = server(() => ({ body: { events: [], continuationToken: null } }));
  expect(await c2.events("update", "u")).toEqual([]);
  expect(u2).toEqual(["/api/stacks/org/my%20project/dev/update/u/events"]);
});

it("refuses events pages that are not the documented shape, and a token that repeats", async () => {
  const cases: [unknown, string][] = [
    [{ events: [] }, "answered JSON without events and a continuationToken"],
    [{ continuationToken: null }, "answered JSON without events and a continuationToken"],
    [[], "answered JSON without events and a continuationToken"],
    [{ events: {}, continuationToken: null }, "answered an events field that is not a list"],
    [{ events: [], continuationToken: 5 }, "answered a continuationToken that is not a new string"],
    [{ events: [], continuationToken: "same" }, "answered a continuationToken that is not a new string"],
  ];
  for (const [body, message] of cases) {
    const { client } = server(() => ({ body }));
    await expect(client.events("preview", "p")).rejects.toThrow(message);
  }
});

it("tells Pulumi Cloud's own 404 (wait) from anyone else's (an error), and a page that is not JSON", async () => {
  const notYet = server(() => ({ status: 404, body: { code: 404, message: "Stack not found" } }));
  await expect(notYet.client.list("updates")).rejects.toBeInstanceOf(NotYet);
  await expect(notYet.client.list("updates")).rejects.toThrow("updates: HTTP 404, Stack not found");
  await expect(notYet.client.list("updates/3/previews", { missingIsEmpty: true })).rejects.toBeInstanceOf(
    NotFound,
  );
  const other = server(() => ({ status: 404, body: "<html>Not Found</html>" }));
  await expect(other.client.events("update", "u")).rejects.toThrow("HTTP 404 from update/u/events");
  const html = server(() => ({ body: "<!doctype html>" }));
  await expect(html.client.events("update", "u")).rejects.toThrow(
    "update/u/events answered HTTP 200 with a body that is not JSON",
  );
  const list = server(() => ({ body: { updates: null } }));
  expect(await list.client.list("updates")).toEqual([]);
  for (const body of [{}, [], null, { updates: {} }]) {
    const { client } = server(() => ({ body }));
    await expect(client.list("updates")).rejects.toThrow(/without an updates list|not a list/);
  }
});
