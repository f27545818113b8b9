// Verification of one Kargo stage, run by Argo Rollouts' job metric provider as the only container of a Job
// (argo-rollouts v1.9.0 metricproviders/job/job.go: the Job's Complete condition is Successful, Failed is
// Failed). It polls Pulumi Cloud (cloud.mjs) for the operation on the stage's stack whose `git.head` is the
// promoted commit, and once that has succeeded reads all its engine events:
// - a preview passes unless a step's risk class (classify.mjs) is in STOP_ON ("all": any change), and then
//   it stops: the Freight waits for DECIDERS' decision, with each such resource, its class, op and changed
//   keys, the preview's link in Pulumi Cloud, and the command that lets it through (approving the Freight
//   for APPROVE_STAGE in KARGO_PROJECT);
// - an update at stack version N passes only when each of its steps is one the succeeded preview of its
//   commit against the state it changed (listed under version N-1) showed (compare.mjs), and never when it
//   cannot compare them: a preview of the commit against any other version does not count.
// Either way it prints its record on stdout, one JSON line: the operations verified, and what stopped them.
// Events that are not all there yet (fewer than the operation's summary counts, right after it succeeded:
// the events route returns only the events Pulumi Cloud has marked activated unless asked with
// include_non_activated, REST API Stack Updates, Get Engine Events) are read again at each interval, as many
// times as errors are allowed in a row, before it fails.
// It exits 1 with the reason on stderr once the operation failed, stopped or did more than its preview;
// once Pulumi Cloud has not answered with the JSON it documents too many times in a row; once the events
// stayed incomplete; or at the timeout.
//
// Environment (set by lib/pipeline/verification.ts): PULUMI_API_URL, PULUMI_ORGANIZATION, PULUMI_PROJECT,
// PULUMI_STACK, COMMIT, OPERATION (preview | update), PULUMI_CONSOLE_URL, STOP_ON, DECIDERS and
// APPROVE_STAGE (previews; each may be empty), KARGO_PROJECT (the project `kargo approve` names),
// INTERVAL and TIMEOUT (durations such as 10s, 15m),
// PAGE_SIZE, ERROR_LIMIT, PULUMI_ACCESS_TOKEN (from the Secret), JOB_NAME (its Job's, from the pod's label).

import { cloudClient, isDriftCheck, isObject, NotFound, NotYet } from "./cloud.mjs";
import {
  Incomplete,
  compare,
  describe,
  matchedRecord,
  parseStopOn,
  recordOf,
  stepsOf,
  stopLines,
  stops,
} from "./compare.mjs";
import { decision, writeRunMessage } from "./run-message.mjs";

const env = (name) => {
  const value = process.env[name];
  if (!value) fail(`${name} is not set`);
  return value;
};

function fail(reason) {
  process.stderr.write(`${reason}\n`);
  process.exit(1);
}

/**
 * The verdict that is not a pass: the reason on stderr and, for whoever looks at the stage in Kargo, in the
 * AnalysisRun's message (run-message.mjs); then exit 1.
 */
async function failVerdict(reason) {
  // A stop names its Freight, which only the run knows (run-message.mjs freightOf): the log says it as written.
  const text = (facts) => (typeof reason === "function" ? reason(facts) : reason);
  let said = text({});
  const written = await writeRunMessage({
    jobName: process.env.JOB_NAME,
    message: (facts) => (said = text(facts)),
  });
  process.stderr.write(`${said}\n`);
  process.stderr.write(`the reason in the AnalysisRun: ${written}\n`);
  process.exit(1);
}

const seconds = (d) => {
  const match = /^(\d+)(s|m|h)$/.exec(d);
  if (!match) fail(`not a duration: ${d}`);
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2]];
};

const config = {
  api: env("PULUMI_API_URL").replace(/\/+$/, ""),
  console: env("PULUMI_CONSOLE_URL").replace(/\/+$/, ""),
  stack: [env("PULUMI_ORGANIZATION"), env("PULUMI_PROJECT"), env("PULUMI_STACK")],
  commit: env("COMMIT"),
  operation: env("OPERATION"),
  interval: seconds(env("INTERVAL")) * 1000,
  timeout: seconds(env("TIMEOUT")) * 1000,
  pageSize: Number(env("PAGE_SIZE")),
  errorLimit: Number(env("ERROR_LIMIT")),
  token: env("PULUMI_ACCESS_TOKEN"),
  deciders: process.env.DECIDERS ?? "",
  approveStage: process.env.APPROVE_STAGE ?? "",
  kargoProject: env("KARGO_PROJECT"),
};
if (!["preview", "update"].includes(config.operation)) fail(`OPERATION must be preview or update`);
let stopOn = [];
try {
  stopOn = parseStopOn(process.env.STOP_ON);
} catch (error) {
  fail(error.message);
}
const stackName = config.stack.join("/");
const cloud = cloudClient({ api: config.api, stack: config.stack, token: config.token });
const short = config.commit.slice(0, 12);

/**
 * The operations of the promoted commit: `git.head` as PKO's workspace records it, and a start time. A drift
 * check previews the same commit on the same stack every interval; its previews are never a promotion's.
 */
const isOurs = (op) =>
  isObject(op) &&
  isObject(op.environment) &&
  op.environment["git.head"] === config.commit &&
  !isDriftCheck(op) &&
  typeof op.startTime === "number";

/** The newest by start time, however the list is sorted; a retry's result replaces the first try's. */
const newest = (list, info = (x) => x) =>
  list.reduce((a, b) => (info(b).startTime > info(a).startTime ? b : a));

const page = `pageSize=${config.pageSize}&page=1`;

/** The commit's previews in one previews list: the entries (UpdateInfo: `info` and `updateID`). */
const ourPreviews = (entries) => entries.filter((e) => isObject(e) && isOurs(e.info));

/** The commit's previews listed under one stack version, the one each ran against; none when not listed. */
async function previewsUnder(version) {
  try {
    return ourPreviews(
      await cloud.list(`updates/${version}/previews?asc=false&${page}`, { missingIsEmpty: true }),
    );
  } catch (error) {
    if (error instanceof NotFound) return [];
    throw error;
  }
}

/**
 * A preview stage's previews of the commit, from the first stack version that has any: previews are listed
 * per stack version, the one each ran against (REST API: GetLatestStackPreviews, GetStackPreviews,
 * `updates/{version}/previews`); `latest` holds only those since the last update. When an update of the
 * stack finished since (another commit's, while this preview is verified), they are under an older version:
 * look there too, newest version first, the versions from one page of the history.
 */
async function previewsOfCommit() {
  const latest = ourPreviews(await cloud.list(`updates/latest/previews?asc=false&${page}`));
  if (latest.length) return latest;
  const versions = (await cloud.list(`updates?${page}`))
    .filter(isObject)
    .map((u) => u.version)
    .filter((v) => Number.isInteger(v) && v > 0);
  // A preview before the stack's first update ran against version 0: asked for when the page reaches it.
  if (versions.includes(1)) versions.push(0);
  for (const version of [...new Set(versions)].sort((a, b) => b - a)) {
    const mine = await previewsUnder(version);
    if (mine.length) return mine;
  }
  return [];
}

/**
 * The previews an update at stack version N may be compared with: its commit's, succeeded, listed under
 * version N-1 (0 for a stack's first update), the state that update changed, and started before it. A
 * preview of the commit against another version (its first promotion, long ago, before a rollback took the
 * stack back to it) ran against a state that is gone, so it never counts.
 */
const previewsAgainst = async (update) =>
  (await previewsUnder(update.version - 1)).filter(
    (e) => e.info.result === "succeeded" && e.info.startTime <= update.startTime,
  );

const updateIdOf = (entry, what) => {
  if (typeof entry?.updateID !== "string" || entry.updateID === "")
    throw new Error(`${what}: Pulumi Cloud answered without an updateID`);
  return entry.updateID;
};

const stackUrl = `${config.console}/${config.stack.map(encodeURIComponent).join("/")}`;
const record = (fields) =>
  process.stdout.write(
    `${JSON.stringify({ record: "pulumi-verification", stack: stackName, commit: config.commit, ...fields })}\n`,
  );

/** The verdict on a succeeded preview: its engine events against STOP_ON. */
async function verifyPreview(entry) {
  const updateID = updateIdOf(entry, "the preview");
  const steps = stepsOf(await cloud.events("preview", updateID));
  const stopped = stops(steps, stopOn);
  const link = `${stackUrl}/previews/${encodeURIComponent(updateID)}`;
  record({
    operation: "preview",
    updateID,
    link,
    operations: recordOf(steps),
    stopped: recordOf(stopped.map((s) => s.step)),
  });
  if (!stopped.length) return { ok: true };
  const on = stopOn === "all" ? "any change (STOP_ON=all)" : stopOn.join(", ");
  const what = [
    `the preview of ${short} on ${stackName} stops on ${on}: ${stopped.length} resource(s)`,
    ...stopLines(stopped),
    `preview: ${link}`,
  ];
  if (!config.deciders)
    return {
      ok: false,
      reason: [
        ...what,
        "No group may let it through (DECIDERS is empty): change the program, or the environment's risk policy.",
      ].join("\n"),
    };
  return {
    ok: false,
    reason: ({ freight }) => {
      const { opening, command } = decision({
        project: config.kargoProject,
        freight: freight ?? "<the Freight of this verification>",
        deciders: config.deciders.split(","),
        approveStage: config.approveStage,
      });
      // The command second: a message cut for length (run-message.mjs truncated) loses resources, never it.
      return [opening, command, ...what].join("\n");
    },
  };
}

/** The verdict on a succeeded update: its engine events against its preview's. */
async function verifyUpdate(update) {
  const info = await cloud.get(`updates/${update.version}`);
  const updateID = updateIdOf(info, `update ${update.version}`);
  const updateSteps = stepsOf(await cloud.events("update", updateID));
  const against = update.version - 1;
  const candidates = await previewsAgainst(update);
  const what = `the update of ${short} on ${stackName} (${stackUrl}/updates/${update.version})`;
  if (!candidates.length)
    return {
      ok: false,
      reason: [
        `${what}: no succeeded preview of ${short} against the state this update changed (version ${against}), so it cannot be shown to do only what was approved.`,
        `A preview of the commit against another state (its first promotion's, say) does not count: to take an environment back to an earlier release, use npm run rollback, which previews it against the current state first.`,
      ].join("\n"),
    };
  const preview = newest(candidates, (e) => e.info);
  const previewID = updateIdOf(preview, "the preview");
  const result = compare(stepsOf(await cloud.events("preview", previewID)), updateSteps);
  const link = `${stackUrl}/previews/${encodeURIComponent(previewID)}`;
  record({
    operation: "update",
    updateID,
    version: update.version,
    against,
    preview: { updateID: previewID, link },
    matched: matchedRecord(result.matched),
    unexpected: result.unexpected.map((u) => ({ ...recordOf([u.step])[0], why: u.why })),
  });
  const less = result.matched.filter((m) => m.lessThan);
  if (!result.unexpected.length)
    return {
      ok: true,
      note: less.map((m) => `- ${describe(m.step)}: ${m.step.op}: ${m.lessThan}`).join("\n"),
    };
  return {
    ok: false,
    reason: [
      `${what} did what its preview (${link}) did not show: ${result.unexpected.length} step(s)`,
      ...result.unexpected.map((u) => `- ${describe(u.step)}: ${u.step.op}: ${u.why}`),
      `${result.matched.length} step(s) matched the preview (the record on stdout lists them).`,
    ].join("\n"),
  };
}

/** One look at Pulumi Cloud: the verdict, undefined to look again, or an error thrown. */
async function look() {
  const what = `the ${config.operation} of ${short} on ${stackName}`;
  if (config.operation === "update") {
    // The history, newest first ("?pageSize=1&page=1 ... the most recent update", REST API docs).
    const mine = (await cloud.list(`updates?${page}`)).filter((u) => isOurs(u) && u.kind === "update");
    if (!mine.length) return undefined;
    const update = newest(mine);
    if (update.result === "failed") return { ok: false, reason: `${what} failed` };
    if (update.result !== "succeeded") return undefined;
    if (!Number.isInteger(update.version) || update.version < 1)
      throw new Error(`the history lists ${what} without a version`);
    return verifyUpdate(update);
  }
  const mine = await previewsOfCommit();
  if (!mine.length) return undefined;
  const preview = newest(mine, (e) => e.info);
  if (preview.info.result === "failed") return { ok: false, reason: `${what} failed` };
  return preview.info.result === "succeeded" ? verifyPreview(preview) : undefined;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const deadline = Date.now() + config.timeout;
let errors = 0;
let lastError = "";
let notYet = "";
let incomplete = 0;
let incompleteSince = 0;
let lastIncomplete = "";
for (;;) {
  let result;
  try {
    result = await look();
    errors = 0;
    notYet = "";
    incomplete = 0;
  } catch (error) {
    if (error instanceof Incomplete) {
      // Pulumi Cloud answered, with fewer events than the summary counts: read them again, within a bound.
      errors = 0;
      if (incomplete++ === 0) incompleteSince = Date.now();
      lastIncomplete = error.message;
      process.stderr.write(`look ${incomplete}: ${error.message}\n`);
      if (incomplete > config.errorLimit)
        await failVerdict(
          `${error.message}; still so after ${incomplete} looks over ${Math.round((Date.now() - incompleteSince) / 1000)}s`,
        );
    } else if (error instanceof NotYet) {
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
        await failVerdict(
          `Pulumi Cloud (${config.api}) gave no usable answer ${errors} times in a row; last: ${message}`,
        );
    }
  }
  if (result) {
    if (result.ok) {
      const note = result.note ? `; it did less than its preview:\n${result.note}` : "";
      process.stdout.write(`the ${config.operation} of ${config.commit} on ${stackName} passed${note}\n`);
      process.exit(0);
    }
    await failVerdict(result.reason);
  }
  if (Date.now() + config.interval > deadline) {
    const notFound = `no succeeded ${config.operation} of ${config.commit} on ${stackName} within ${env("TIMEOUT")}`;
    // Pulumi Cloud failing to answer until the timeout is the reason, not a missing operation.
    if (incomplete)
      await failVerdict(
        `${lastIncomplete}; still so at the timeout (${env("TIMEOUT")}), after ${incomplete} look(s)`,
      );
    await failVerdict(
      errors
        ? `${notFound}; Pulumi Cloud (${config.api}) gave no usable answer the last ${errors} time(s); last: ${lastError}`
        : notYet
          ? `${notFound}; Pulumi Cloud still answers ${notYet} (has the stack been created, and may the token read it?)`
          : notFound,
    );
  }
  await sleep(config.interval);
}
