// Verification of one Kargo stage, run by Argo Rollouts' job metric provider as the only container of a Job
// (argo-rollouts v1.9.0 metricproviders/job/job.go: the Job's Complete condition is Successful, Failed is
// Failed). It polls Pulumi Cloud for the operation on the stage's stack whose `git.head` is the promoted
// commit and exits 0 once it has succeeded. It exits 1 with a one-line reason on stderr once the operation
// failed; for a protected preview (CHECK delete or replace) once it succeeded but would delete or replace
// something; once Pulumi Cloud has not answered with the JSON it documents too many times in a row; or at
// the timeout. Dependency-free: Node's own fetch.
//
// Environment (set by lib/pipeline/verification.ts): PULUMI_API_URL, PULUMI_ORGANIZATION, PULUMI_PROJECT,
// PULUMI_STACK, COMMIT, OPERATION (preview | update), CHECK (operation | delete | replace), INTERVAL and
// TIMEOUT (durations such as 10s, 15m), PAGE_SIZE, ERROR_LIMIT, PULUMI_ACCESS_TOKEN (from the Secret).

const env = (name) => {
  const value = process.env[name];
  if (!value) fail(`${name} is not set`);
  return value;
};

function fail(reason) {
  process.stderr.write(`${reason}\n`);
  process.exit(1);
}

const seconds = (d) => {
  const match = /^(\d+)(s|m|h)$/.exec(d);
  if (!match) fail(`not a duration: ${d}`);
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2]];
};

const config = {
  api: env("PULUMI_API_URL").replace(/\/+$/, ""),
  stack: [env("PULUMI_ORGANIZATION"), env("PULUMI_PROJECT"), env("PULUMI_STACK")],
  commit: env("COMMIT"),
  operation: env("OPERATION"),
  check: env("CHECK"),
  interval: seconds(env("INTERVAL")) * 1000,
  timeout: seconds(env("TIMEOUT")) * 1000,
  pageSize: Number(env("PAGE_SIZE")),
  errorLimit: Number(env("ERROR_LIMIT")),
  token: env("PULUMI_ACCESS_TOKEN"),
};
if (!["preview", "update"].includes(config.operation)) fail(`OPERATION must be preview or update`);
if (!["operation", "delete", "replace"].includes(config.check))
  fail(`CHECK must be operation, delete or replace`);
const stackName = config.stack.join("/");

/** Thrown for a page that is an answer but not one of ours: an older stack version with no previews. */
class NotFound extends Error {}

/**
 * Pulumi Cloud's own 404 (JSON with code 404) for the stack or its latest version: the stack does not exist
 * until PKO's first run creates it, and has no version before its first update. Not an error: wait.
 */
class NotYet extends Error {}

/**
 * One page of a Pulumi Cloud list: its `updates`, or an error for anything else. A body that is not JSON
 * (a portal's or a proxy's page) or JSON without an `updates` list is an error, never an empty list.
 */
async function list(path, { missingIsEmpty = false } = {}) {
  const url = `${config.api}/api/stacks/${config.stack.map(encodeURIComponent).join("/")}/${path}`;
  const response = await fetch(url, {
    // The token goes to the API URL the pipeline validated, and nowhere a redirect points.
    headers: { Authorization: `token ${config.token}`, Accept: "application/vnd.pulumi+8" },
    redirect: "error",
    signal: AbortSignal.timeout(10_000),
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
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${path} answered HTTP ${response.status} with a body that is not JSON`);
  }
  // Pulumi Cloud encodes an empty list as null (a Go nil slice); a missing or non-list `updates` is not its answer.
  if (body === null || typeof body !== "object" || Array.isArray(body) || !("updates" in body))
    throw new Error(`${path} answered JSON without an updates list`);
  if (body.updates === null) return [];
  if (!Array.isArray(body.updates)) throw new Error(`${path} answered an updates field that is not a list`);
  return body.updates;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** The operations of the promoted commit: `git.head` as PKO's workspace records it, and a start time. */
const ours = (ops) =>
  ops.filter(
    (op) =>
      isObject(op) &&
      isObject(op.environment) &&
      op.environment["git.head"] === config.commit &&
      typeof op.startTime === "number",
  );

/** The newest by start time, however the list is sorted; a retry's result replaces the first try's. */
const newest = (ops) => ops.reduce((a, b) => (b.startTime > a.startTime ? b : a));

/** The verdict on the commit's newest operation: undefined while it is not finished. */
function verdict(op) {
  const what = `the ${config.operation} of ${config.commit.slice(0, 12)} on ${stackName}`;
  if (config.check === "operation") {
    if (op.result === "failed") return { ok: false, reason: `${what} failed` };
    return op.result === "succeeded" ? { ok: true } : undefined;
  }
  // A failed preview's changes are not its verdict: the operation's own check fails the run (and Rollouts
  // then ends this one, argo-rollouts v1.9.0 utils/analysis/helpers.go IsTerminating), so the run names it.
  if (op.result !== "succeeded") return undefined;
  const changes = isObject(op.resourceChanges) ? op.resourceChanges[config.check] : undefined;
  if (changes === undefined || changes === null || changes === 0) return { ok: true };
  if (typeof changes !== "number")
    return { ok: false, reason: `${what}: resourceChanges.${config.check} is not a number` };
  return {
    ok: false,
    reason: `${what} would ${config.check} ${changes} resource(s): a destructive-change approver must approve it`,
  };
}

const page = `pageSize=${config.pageSize}&page=1`;

/** One look at Pulumi Cloud: the verdict, undefined to look again, or an error thrown. */
async function look() {
  if (config.operation === "update") {
    // The history, newest first ("?pageSize=1&page=1 ... the most recent update", REST API docs).
    const mine = ours((await list(`updates?${page}`)).filter((u) => isObject(u) && u.kind === "update"));
    return mine.length ? verdict(newest(mine)) : undefined;
  }
  // Previews are listed per stack version, the one each ran against (REST API: GetLatestStackPreviews,
  // GetStackPreviews, `updates/{version}/previews`); `latest` holds only those since the last update. When an
  // update of the stack finishes while this preview is verified, the preview is under an older version:
  // look there too, newest version first, the versions from one page of the history.
  const previews = (entries) => entries.filter(isObject).map((p) => p.info);
  const latest = ours(previews(await list(`updates/latest/previews?asc=false&${page}`)));
  if (latest.length) return verdict(newest(latest));
  const versions = (await list(`updates?${page}`))
    .filter(isObject)
    .map((u) => u.version)
    .filter((v) => Number.isInteger(v) && v > 0);
  for (const version of [...new Set(versions)].sort((a, b) => b - a)) {
    let entries;
    try {
      entries = await list(`updates/${version}/previews?asc=false&${page}`, { missingIsEmpty: true });
    } catch (error) {
      if (error instanceof NotFound) continue;
      throw error;
    }
    const mine = ours(previews(entries));
    if (mine.length) return verdict(newest(mine));
  }
  return undefined;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const deadline = Date.now() + config.timeout;
let errors = 0;
let lastError = "";
let notYet = "";
for (;;) {
  let result;
  try {
    result = await look();
    errors = 0;
    notYet = "";
  } catch (error) {
    if (error instanceof NotYet) {
      // An answer, so no error in a row; said at the timeout if it is still the answer then.
      errors = 0;
      notYet = error.message;
      process.stderr.write(`not there yet: ${notYet}\n`);
    } else {
      errors++;
      const cause = error.cause?.code ?? error.cause?.message;
      const message = `${error.message}${cause ? ` (${cause})` : ""}`;
      lastError = message;
      process.stderr.write(`error ${errors} in a row: ${message}\n`);
      if (errors > config.errorLimit)
        fail(`Pulumi Cloud (${config.api}) gave no usable answer ${errors} times in a row; last: ${message}`);
    }
  }
  if (result) {
    if (result.ok) {
      process.stdout.write(
        `the ${config.operation} of ${config.commit} on ${stackName} passed (${config.check})\n`,
      );
      process.exit(0);
    }
    fail(result.reason);
  }
  if (Date.now() + config.interval > deadline) {
    const notFound =
      config.check === "operation"
        ? `no finished ${config.operation} of ${config.commit} on ${stackName} within ${env("TIMEOUT")}`
        : `no succeeded ${config.operation} of ${config.commit} on ${stackName} within ${env("TIMEOUT")} to count its ${config.check}s in`;
    // Pulumi Cloud failing to answer until the timeout is the reason, not a missing operation.
    fail(
      errors
        ? `${notFound}; Pulumi Cloud (${config.api}) gave no usable answer the last ${errors} time(s); last: ${lastError}`
        : notYet
          ? `${notFound}; Pulumi Cloud still answers ${notYet} (has the stack been created, and may the token read it?)`
          : notFound,
    );
  }
  await sleep(config.interval);
}
