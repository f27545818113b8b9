// Types of kargo/verification/run-message.mjs (a dependency-free module the verification Job runs as is).
export declare const MAX_MESSAGE: number;
export declare function truncated(text: string, max?: number): string;
export declare function decision(facts: {
  project: string;
  freight: string;
  deciders: string[];
  approveStage: string;
}): { opening: string; command: string };
export declare function freightOf(run: unknown): string | undefined;
export declare function writeRunMessage(options: {
  jobName: string | undefined;
  message: string | ((facts: { freight: string | undefined }) => string);
  dir?: string;
  host?: string;
  port?: string;
  tries?: number;
  intervalMs?: number;
  settleMs?: number;
  timeoutMs?: number;
}): Promise<string>;
