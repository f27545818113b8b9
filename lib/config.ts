import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";

/**
 * Thrown for stack configuration that would deploy something broken. Extends `pulumi.RunError` so the CLI
 * prints the message alone, without a stack trace.
 */
export class ConfigError extends pulumi.RunError {
  constructor(
    readonly project: string,
    readonly problems: string[],
  ) {
    super(
      `Invalid configuration for project "${project}":\n` +
        problems.map((p) => `  - ${p}`).join("\n") +
        `\nSee ${project}/Pulumi.yaml for every key, its type and its default.`,
    );
    this.name = "ConfigError";
  }
}

type SecretOf<T, K extends keyof T> = Omit<T, K> & { [P in K]: pulumi.Output<NonNullable<T[P]>> };

/**
 * Reads the current project's namespace of stack configuration, validates it against `schema` and returns
 * the typed values. Call it first in a program: it throws a {@link ConfigError} naming every bad key and what
 * it allows before any resource is registered.
 *
 * Values arrive as strings (the CLI stores arrays and numbers as JSON text), so a value the schema rejects as
 * a string is parsed as JSON and validated again. Keys under the namespace that the schema does not know are
 * errors too: a misspelt key would otherwise be ignored silently. Keys listed in `secrets` come back as
 * Pulumi secrets.
 */
export function loadConfig<T extends z.ZodObject>(schema: T, options?: { project?: string }): z.output<T>;
export function loadConfig<T extends z.ZodObject, K extends keyof z.output<T> & string>(
  schema: T,
  options: { secrets: readonly K[]; project?: string },
): SecretOf<z.output<T>, K>;
export function loadConfig(
  schema: z.ZodObject,
  options: { secrets?: readonly string[]; project?: string } = {},
): Record<string, unknown> {
  const project = options.project ?? pulumi.getProject();
  const config = new pulumi.Config(project);
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};

  for (const [key, field] of Object.entries(schema.shape)) {
    const text = config.get(key);
    if (text === undefined) continue;
    raw[key] = coerce(field as z.ZodType, text);
  }

  const known = new Set(Object.keys(schema.shape));
  for (const fullKey of Object.keys(pulumi.runtime.allConfig())) {
    const [namespace, key] = fullKey.split(":", 2);
    if (namespace === project && key !== undefined && !known.has(key)) {
      problems.push(`${fullKey}: unknown key; known keys are ${[...known].sort().join(", ")}`);
    }
  }

  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const [key, ...rest] = issue.path.map(String);
      const where = rest.length > 0 ? `${project}:${key} (at ${rest.join(".")})` : `${project}:${key}`;
      const missing = key !== undefined && rest.length === 0 && raw[key] === undefined;
      const message = missing ? `is required; set it with pulumi config set ${key} <value>` : issue.message;
      problems.push(`${key === undefined ? project : where}: ${message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(project, problems);

  const values = { ...(parsed.data as Record<string, unknown>) };
  for (const key of options.secrets ?? []) {
    if (values[key] !== undefined) values[key] = pulumi.secret(values[key]);
  }
  return values;
}

function coerce(field: z.ZodType, text: string): unknown {
  if (field.safeParse(text).success) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text; // validation reports it against the expected type
  }
}

/** Schema pieces that several projects validate the same way. */
export const configFields = {
  /** `org/project/stack` of an upstream stack read through a StackReference. */
  stackName: (what: string) =>
    z
      .string()
      .regex(
        /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/,
        `must name the ${what} stack as <org>/<project>/<stack>`,
      ),
  iamRoleArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/,
      "must be an IAM role ARN such as arn:aws:iam::123456789012:role/Admins",
    ),
  iamPolicyArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:iam::(\d{12}|aws):policy\/[\w+=,.@/-]{1,512}$/,
      "must be an IAM policy ARN such as arn:aws:iam::aws:policy/ReadOnlyAccess",
    ),
  tags: z.record(z.string().min(1).max(128), z.string().max(256)),
};
