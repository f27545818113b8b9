// The values the risk rules read (kargo/verification/rules.mjs), and the two the engine's events hold in
// place of a value: unknown at preview, and secret. A rule reads an input through these tests, which take a
// value that cannot be told as matching (what cannot be told stops) and note it, so the stop says which
// value it could not read and why.

/**
 * The string Pulumi's engine puts where a value is unknown at preview time (pulumi/pulumi v3.274.1
 * pkg/resource/stack/deployment.go SerializePropertyValue, computedValuePlaceholder), as it reaches the
 * engine events' inputs.
 */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/**
 * The key and value marking a secret in the engine events' inputs: the CLI uploads events converted with
 * showSecrets false, so a secret reaches them as `{ [SECRET_SIG_KEY]: SECRET_SIG, ciphertext: "[secret]" }`
 * (pulumi/pulumi v3.274.1 pkg/backend/httpstate/state.go, ConvertEngineEvent(event, false);
 * pkg/backend/display/events.go, config.BlindingCrypter; sdk/go/common/resource/sig SecretSig).
 */
export const SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d";
export const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export const OPEN_CIDRS = ["0.0.0.0/0", "::/0"];
export const PUBLIC_ACLS = ["public-read", "public-read-write", "authenticated-read"];

/**
 * A value that cannot be told: unknown at preview, or secret. `unclear` marks inputs before a rule reads
 * them, each such value replaced by one of these, holding its path; a rule that matches because of one
 * records it (`used`), so the stop says which value it could not read and why.
 */
export class Unclear {
  constructor(why, path) {
    this.why = why;
    this.path = path;
    this.used = false;
  }
}

export const isObject = (v) =>
  v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Unclear);
export const isSecret = (v) => isObject(v) && v[SECRET_SIG_KEY] === SECRET_SIG;

/** The inputs with each unknown or secret value replaced by an Unclear, and the list of those. */
export function unclear(inputs) {
  const found = [];
  const walk = (v, path) => {
    const why = v === UNKNOWN ? "unknown at preview" : isSecret(v) ? "secret" : undefined;
    if (why) {
      const u = new Unclear(why, path);
      found.push(u);
      return u;
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`));
    if (isObject(v))
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, path ? `${path}.${k}` : k)]));
    return v;
  };
  return { inputs: walk(inputs, ""), found };
}

/** A value as a list: a single value (unset included, which no test matches) as a list of one. */
const list = (v) => (Array.isArray(v) ? v : [v]);
/**
 * True when a value that decides the rule cannot be told: it is unknown or secret, or a list holding one
 * (a CIDR list with one unknown entry). Only the value the rule reads: an unknown elsewhere in the same
 * object (a security group rule's `securityGroupId`) decides nothing here.
 */
const unknown = (v) => {
  if (v instanceof Unclear) return (v.used = true);
  const found = Array.isArray(v) ? v.filter((x) => x instanceof Unclear) : [];
  for (const u of found) u.used = true;
  return found.length > 0;
};
/** A value that is one of `values`, or cannot be told. */
export const oneOf = (v, values) => unknown(v) || list(v).some((x) => values.includes(x));
/** A boolean input that is false, unset (every provider default it stands for here is false), or unclear. */
export const isFalse = (v) => unknown(v) || v === undefined || v === null || v === false;
export const isTrue = (v, absent = false) =>
  unknown(v) || (v === undefined || v === null ? absent === true : v === true);
/** An object input that is unset or cannot be told (a block whose settings, unset, are the risky default). */
export const notSet = (v) => unknown(v) || !isObject(v);
export const anyOf = (items, test) =>
  unknown(items) || list(items).some((i) => unknown(i) || (isObject(i) && test(i)));

/** Ingress from anywhere in a security group's rule list (classic and native shapes). */
export const openIngress = (rules) =>
  anyOf(
    rules,
    (r) =>
      oneOf(r.cidrBlocks, OPEN_CIDRS) ||
      oneOf(r.ipv6CidrBlocks, OPEN_CIDRS) ||
      oneOf(r.cidrIp, OPEN_CIDRS) ||
      oneOf(r.cidrIpv4, OPEN_CIDRS) ||
      oneOf(r.cidrIpv6, OPEN_CIDRS),
  );
