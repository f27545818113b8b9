// personalize run in-process, as the tests of `npm run personalize` and of its `--account` option call it.
import { PassThrough } from "node:stream";
import { personalize, type PersonalizeIO } from "../lib/cli/personalize";

/** Runs personalize in `root` with text streams, returning its exit code and what it printed. */
export async function runPersonalize(root: string, args: string[], interactive = false, answers?: string) {
  const output = new PassThrough();
  const errors = new PassThrough();
  const input = new PassThrough();
  if (answers !== undefined) input.end(answers);
  const chunks = { out: "", err: "" };
  output.on("data", (c) => (chunks.out += c));
  errors.on("data", (c) => (chunks.err += c));
  const io: PersonalizeIO = { args, input, output, errors, interactive, root };
  const code = await personalize(io);
  return { code, ...chunks };
}
