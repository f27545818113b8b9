// A stand-in for the `kargo` CLI that `npm run rollback` runs. It exists because Kargo's API server cannot
// run here (its `api` module is not served to this suite, and it needs a cluster with Kargo's controller
// behind it): it records its call and answers with the JSON Kargo v1.11.2 prints (akuity/kargo v1.11.2
// api/v1alpha1/stage_types.go, freight_types.go, promotion_types.go; a core ConfigMap for `get`/`update
// configmap`, pkg/server/patch_config_map_v1alpha1.go), from a state file the test writes.
// test/rollback-standins.ts puts it on PATH as `kargo`.
//
// Usage: node rollback-standin.mjs kargo <state dir> <args...>. State (state.json):
//   freight: { <name or alias>: Freight }, stages: { <stage>: Stage status }, newest: <Freight name>, warehouse,
//   verdicts: { <stage>: { phase, message } } (how a promotion's verification ends; default Successful),
//   deciderStages: [<stage>...] (promoted by hand only when role is "decider"), previewStages (also by a
//   "promoter"), role, user (the email of the session's OIDC token), anonymous (a token naming nobody), loggedOut,
//   configMaps: { <name>: ConfigMap } (the kargo project's requests; "decider" and "promoter" write them).
//   promotionSteps: the steps each Promotion carries (the stage's promotionTemplate).
// Every call is appended to calls.jsonl as { tool, args, stdin }.
import * as fs from "node:fs";
import * as path from "node:path";

const [tool, dir, ...args] = process.argv.slice(2);
const stateFile = path.join(dir, "state.json");
const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
fs.appendFileSync(path.join(dir, "calls.jsonl"), `${JSON.stringify({ tool, args })}\n`);

const flag = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const save = () => fs.writeFileSync(stateFile, JSON.stringify(state, null, 2));
const fail = (message) => {
  process.stderr.write(`Error: ${message}\n`);
  process.exit(1);
};
const print = (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");
const origin = `Warehouse/${state.warehouse}`;
const originRef = { kind: "Warehouse", name: state.warehouse };

function kargo() {
  // akuity/kargo v1.11.2 pkg/cli/client/client.go errNotLoggedIn
  if (state.loggedOut)
    fail(
      "seems like you are not logged in; please use `kargo login` to authenticate or set both the KARGO_API_ADDRESS and KARGO_API_TOKEN environment variables",
    );
  // pkg/cli/cmd/config/view.go: the session's config; with --raw, its OIDC ID token unmasked.
  if (args[0] === "config" && args[1] === "view") {
    const part = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
    // An admin's or another issuer's token may name nobody this reads (`anonymous`).
    const claims = state.anonymous ? { iss: "kargo" } : { sub: "0f1e2d3c", email: state.user };
    const token = `${part({ alg: "RS256", typ: "JWT" })}.${part(claims)}.c2ln`;
    return print({ kind: "CLIConfig", apiAddress: "https://kargo.example.com", bearerToken: token });
  }
  if (args[1] === "configmap" && (args[0] === "get" || args[0] === "update")) {
    const name = args[2];
    const cm = state.configMaps?.[name];
    if (!cm)
      fail(
        `${args[0] === "get" ? "get" : "patch"} project ConfigMap: 404 Not Found: configmaps "${name}" not found`,
      );
    // Kargo asks RBAC about the person's Kargo role ServiceAccounts, by the ConfigMap's name.
    if (!["decider", "promoter"].includes(state.role))
      fail(
        `${args[0] === "get" ? "get" : "patch"} project ConfigMap: 403 Forbidden: configmaps "${name}" is forbidden`,
      );
    if (args[0] === "get") return print(cm);
    // pkg/cli/cmd/update/configmaps.go: each --set key=value, both trimmed, merged into the data.
    for (let i = 0; i < args.length; i++)
      if (args[i] === "--set") {
        const [key, ...value] = args[i + 1].split("=");
        cm.data = { ...cm.data, [key.trim()]: value.join("=").trim() };
      }
    // Kargo's API server writes it as itself, stamped with the API server's clock.
    cm.metadata.managedFields = [{ manager: "kargo", operation: "Update", time: now() }];
    save();
    return print(cm);
  }
  if (args[0] === "get" && args[1] === "freight") {
    const f = state.freight[flag("--name")];
    if (!f) fail(`get freight ${flag("--name")}: 404 Not Found`);
    return print(f);
  }
  if (args[0] === "get" && args[1] === "stage") {
    const name = args[2];
    const s = state.stages[name] ?? {};
    // The first look after a promotion sees it still running: the rollback has to poll.
    if (state.pending?.[name]) {
      delete state.pending[name];
      save();
      const running = { ...s, lastPromotion: { ...s.lastPromotion, status: { phase: "Running" } } };
      return print({ metadata: { name }, status: running });
    }
    return print({ metadata: { name }, status: s });
  }
  if (args[0] === "promote") {
    const stage = flag("--stage");
    const refused =
      ((state.deciderStages ?? []).includes(stage) && state.role !== "decider") ||
      ((state.previewStages ?? []).includes(stage) && !["decider", "promoter"].includes(state.role));
    if (refused) fail(`403 Forbidden: {"error":"user is not allowed to promote to stage ${stage}"}`);
    const freight = flag("--freight") ?? state.newest;
    const n = (state.promotions = (state.promotions ?? 0) + 1);
    const name = `${stage}.promotion-${n}`;
    const verdict = state.verdicts?.[stage] ?? { phase: "Successful", message: "" };
    const before = state.stages[stage] ?? {};
    const holds = { ...before.autoPromotionHolds };
    // A hand-made Promotion of chosen Freight holds the stage; one of Kargo's pick lifts it once it ends.
    if (flag("--freight"))
      holds[origin] = {
        freightName: freight,
        origin: originRef,
        promotionName: name,
        createdAt: now(),
      };
    else delete holds[origin];
    state.pending = { ...state.pending, [stage]: true };
    const ref = { name: freight, origin: originRef };
    state.stages[stage] = {
      autoPromotionHolds: holds,
      lastPromotion: { name, freight: ref, status: { phase: "Succeeded", freight: ref }, finishedAt: now() },
      freightHistory: [
        {
          id: `${stage}-${n}`,
          items: { [origin]: ref },
          verificationHistory: [
            { id: `v${n}`, phase: verdict.phase, message: verdict.message, startTime: now() },
          ],
        },
        ...(before.freightHistory ?? []),
      ],
    };
    save();
    const promotion = {
      apiVersion: "kargo.akuity.io/v1alpha1",
      kind: "Promotion",
      metadata: { name },
      spec: { stage, freight, steps: state.promotionSteps },
    };
    state.printed = [...(state.printed ?? []), promotion];
    save();
    return print(promotion);
  }
  fail(`the stand-in kargo does not know: kargo ${args.join(" ")}`);
}

if (tool === "kargo") kargo();
else fail(`the stand-in is kargo only, not ${tool}`);
