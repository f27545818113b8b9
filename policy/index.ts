// The policy pack Pulumi runs with `--policy-pack policy`: the policies of ./policies.ts, all mandatory.
import { PolicyPack } from "@pulumi/policy";
import { policies } from "./policies";

new PolicyPack("platform", { enforcementLevel: "mandatory", policies });
