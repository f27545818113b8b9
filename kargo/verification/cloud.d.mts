// Types of kargo/verification/cloud.mjs (a dependency-free module the verification Job runs as is).
export declare class NotFound extends Error {}
export declare class NotYet extends Error {}
export declare const isObject: (v: unknown) => v is Record<string, unknown>;
export declare const MAX_EVENT_PAGES: number;
export declare const DRIFT_CHECK_KEY: string;
export declare const isDriftCheck: (op: unknown) => boolean;
export declare function cloudClient(options: {
  api: string;
  stack: [string, string, string];
  token: string;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}): {
  get(path: string, options?: { missingIsEmpty?: boolean }): Promise<unknown>;
  list(path: string, options?: { missingIsEmpty?: boolean }): Promise<unknown[]>;
  events(kind: "preview" | "update", updateID: string): Promise<unknown[]>;
};
