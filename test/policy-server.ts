// The policy pack as the Pulumi engine runs it: policy/index.ts started as its own process (it prints the port
// of its analyzer gRPC server, which the engine reads), then asked over gRPC, with the engine's messages from
// @pulumi/pulumi's proto package, to analyze planned resources.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import * as path from "node:path";
import { repoRoot } from "../lib/cli/plan/projects";
import type { PlannedResource } from "../policy/offline";

// The gRPC and protobuf modules the generated clients were built with, so that their instanceof checks hold.
const fromProto = createRequire(require.resolve("@pulumi/pulumi/proto/analyzer_pb"));
const grpc = fromProto("@grpc/grpc-js") as any;
const pb = fromProto("./analyzer_pb") as any;
const { AnalyzerClient } = fromProto("./analyzer_grpc_pb") as any;
const { Struct } = fromProto("google-protobuf/google/protobuf/struct_pb") as any;
const { Empty } = fromProto("google-protobuf/google/protobuf/empty_pb") as any;

export interface Diagnostic {
  policy: string;
  message: string;
  enforcementLevel: number;
}

export interface PolicyServer {
  policies(): Promise<{ name: string; enforcementLevel: number }[]>;
  analyze(r: PlannedResource): Promise<Diagnostic[]>;
  close(): void;
}

const call = <T>(fn: (cb: (err: Error | null, res: T) => void) => void) =>
  new Promise<T>((resolve, reject) => fn((err, res) => (err ? reject(err) : resolve(res))));

/** Starts policy/index.ts the way Pulumi's Node.js policy host does: in the pack's folder, TypeScript included. */
export async function startPolicyServer(): Promise<PolicyServer> {
  const child: ChildProcess = spawn(path.join(repoRoot, "node_modules", ".bin", "tsx"), ["index.ts"], {
    cwd: path.join(repoRoot, "policy"),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once("exit", (code) => reject(new Error(`the policy pack exited with ${code}: ${stderr}`)));
  });
  const client = new AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    async policies() {
      const info = await call<any>((cb) => client.getAnalyzerInfo(new Empty(), cb));
      return info
        .getPoliciesList()
        .map((p: any) => ({ name: p.getName(), enforcementLevel: p.getEnforcementlevel() }));
    },
    async analyze(r) {
      const options = new pb.AnalyzerResourceOptions();
      options.setProtect(r.options.protect);
      options.setDeletebeforereplace(Boolean(r.options.deleteBeforeReplace));
      const request = new pb.AnalyzeRequest();
      request.setType(r.type);
      request.setName(r.name);
      request.setUrn(r.urn);
      request.setProperties(Struct.fromJavaScript(r.inputs));
      request.setOptions(options);
      const response = await call<any>((cb) => client.analyze(request, cb));
      return response.getDiagnosticsList().map((d: any) => ({
        policy: d.getPolicyname(),
        message: d.getMessage(),
        enforcementLevel: d.getEnforcementlevel(),
      }));
    },
    close() {
      client.close();
      child.kill();
    },
  };
}

/** The enforcement level `mandatory` in the analyzer protocol (pulumi/proto/analyzer.proto EnforcementLevel). */
export const MANDATORY = pb.EnforcementLevel.MANDATORY as number;
