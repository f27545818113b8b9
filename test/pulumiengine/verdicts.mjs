// The verification Job's verdicts on engine events the Go tests of this folder made with Pulumi's engine: for
// each case on stdin, what kargo/verification/verify.mjs decides of a succeeded preview under each STOP_ON
// given (verifyPreview: stepsOf, stops, stopLines, recordOf) and of a succeeded update against that preview
// (verifyUpdate: stepsOf of both, compare, matchedRecord). Run by verdicts_test.go with node; one JSON line out per case.
import {
  compare,
  describe,
  matchedRecord,
  parseStopOn,
  recordOf,
  stepsOf,
  stopLines,
  stops,
} from "../../kargo/verification/compare.mjs";

const input = JSON.parse(
  await new Promise((resolve) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => (text += chunk));
    process.stdin.on("end", () => resolve(text));
  }),
);

const attempt = (f) => {
  try {
    return f();
  } catch (error) {
    return { error: error.message };
  }
};

const out = input.map(({ preview, update, stopOn }) => ({
  preview: attempt(() => {
    const steps = stepsOf(preview);
    return {
      operations: recordOf(steps),
      policies: Object.fromEntries(
        stopOn.map((value) => {
          const stopped = stops(steps, parseStopOn(value));
          const lines = stopLines(stopped);
          return [
            value,
            {
              stopped: stopped.map((s, i) => ({
                ...recordOf([s.step])[0],
                classes: s.classes,
                line: lines[i],
              })),
            },
          ];
        }),
      ),
    };
  }),
  ...(update
    ? {
        update: attempt(() => {
          const result = compare(stepsOf(preview), stepsOf(update));
          return {
            matched: matchedRecord(result.matched),
            unexpected: result.unexpected.map((u) => ({
              ...recordOf([u.step])[0],
              why: u.why,
              line: `- ${describe(u.step)}: ${u.step.op}: ${u.why}`,
            })),
          };
        }),
      }
    : {}),
}));
process.stdout.write(`${JSON.stringify(out)}\n`);
