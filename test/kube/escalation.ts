// cluster-setup's escalation check (cluster-setup/escalation.ts) over rules the Go tests hand over
// (test/kube/workloads_test.go). Reads a JSON array of RBAC rules on stdin and prints, for each, why it is
// refused ("" when it is granted), in a stack namespace's Role.
import * as fs from "node:fs";
import { escalation, type PolicyRuleShape } from "../../cluster-setup/escalation";

const rules = JSON.parse(fs.readFileSync(0, "utf8")) as PolicyRuleShape[];
process.stdout.write(JSON.stringify(rules.map((rule) => escalation(rule, "namespace") ?? "")));
