// Stand-ins for the `kargo` and `kubectl` CLIs that `npm run rollback` runs. They exist because Kargo's API
// server cannot run here (its `api` module is not served to this suite, and it needs a cluster with Kargo's
// controller behind it): each records its call and answers with the JSON Kargo v1.11.2 and kubectl print
// (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go, freight_types.go, promotion_types.go), from a state
// file the test writes. test/rollback-run.test.ts puts them on PATH as `kargo` and `kubectl`.
//
// Usage: node rollback-standin.mjs <kargo|kubectl> <state dir> <args...>. State (state.json):
//   freight: { <name or alias>: Freight }, stages: { <stage>: Stage status }, newest: <Freight name>, warehouse,
//   verdicts: { <stage>: { phase, message } } (how a promotion's verification ends; default Successful),
//   deciderStages: [<stage>...] (promoted by hand only when role is "decider"), previewStages (also by a
//   "promoter"), role, user, loggedOut,
//   configMaps: { <name>: ConfigMap }.
//   promotionSteps: the steps each Promotion carries (the stage's promotionTemplate).
// Every call is appended to calls.jsonl as { tool, args, stdin }.
import * as fs from "node:fs";
import * as path from "node:path";

const [tool, dir, ...args] = process.argv.slice(2);
const stateFile = path.join(dir, "state.json");
const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
const stdin = tool === "kubectl" && args.includes("-") ? fs.readFileSync(0, "utf8") : undefined;
fs.appendFileSync(path.join(dir, "calls.jsonl"), `${JSON.stringify({ tool, args, stdin })}\n`);

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

function kubectl() {
  if (args[0] === "auth" && args[1] === "whoami")
    return print({ kind: "SelfSubjectReview", status: { userInfo: { username: state.user, groups: [] } } });
  if (args[0] === "apply") {
    const object = JSON.parse(stdin);
    // The API server stamps each write with its own clock.
    object.metadata.managedFields = [
      { manager: "kubectl-client-side-apply", operation: "Update", time: now() },
    ];
    state.configMaps = { ...state.configMaps, [object.metadata.name]: object };
    save();
    return process.stdout.write(`configmap/${object.metadata.name} configured\n`);
  }
  if (args[0] === "get" && args[1] === "configmap") {
    const cm = state.configMaps?.[args[2]];
    if (!cm) fail(`configmaps "${args[2]}" not found`);
    // kubectl leaves managedFields out unless asked (kubectl v1.21 and later).
    if (!args.includes("--show-managed-fields")) delete cm.metadata.managedFields;
    return print(cm);
  }
  fail(`the stand-in kubectl does not know: kubectl ${args.join(" ")}`);
}

if (tool === "kargo") kargo();
else kubectl();
