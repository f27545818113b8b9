// What the plan command's options accept, apart from what they plan: the command checks its arguments against
// these before it loads any Pulumi SDK, so a wrong option is refused at once.

/** The chained projects in deployment order; each reads the one before it through a StackReference. */
export const projectOrder = ["cluster", "cluster-setup", "kargo"] as const;
export type ProjectName = (typeof projectOrder)[number];

/** The formats of `--diff`'s report. */
export const formats = ["text", "markdown", "json"] as const;
export type Format = (typeof formats)[number];
