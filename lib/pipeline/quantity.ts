// Kubernetes quantities in the one form Kubernetes writes them back. PKO reads a Stack's workspace resources
// into core/v1 types and writes them back with its finalizer (test/kube/pko.go), which prints each quantity
// in canonical form (k8s.io/apimachinery v0.34.3 pkg/api/resource/quantity.go, CanonicalizeBytes): "1024Mi"
// comes back as "1Gi", "1000m" as "1". A Stack planned in another form would change on PKO's first update,
// and the admission policy would refuse it. Only the forms the pipeline's schema accepts are read here:
// digits with no suffix, "m", "Mi" or "Gi".

const DECIMAL_SUFFIXES: Record<number, string> = {
  [-3]: "m",
  0: "",
  3: "k",
  6: "M",
  9: "G",
  12: "T",
  15: "P",
  18: "E",
};
const BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/** The canonical form of a quantity the schema accepts; anything else is returned as it is. */
export function canonicalQuantity(quantity: string): string {
  const match = /^(\d+)(m|Mi|Gi)?$/.exec(quantity);
  if (!match) return quantity;
  const digits = BigInt(match[1]!);
  const suffix = match[2] ?? "";
  if (digits === 0n) return "0";
  if (suffix === "Mi" || suffix === "Gi") {
    // Binary: the largest power of 1024 that divides the bytes (below 1024 bytes it would be decimal, which
    // a Mi or Gi amount never is).
    let value = digits * 1024n ** BigInt(BINARY_SUFFIXES.indexOf(suffix));
    let power = 0;
    while (value % 1024n === 0n && power < BINARY_SUFFIXES.length - 1) {
      value /= 1024n;
      power += 1;
    }
    return `${value}${BINARY_SUFFIXES[power]}`;
  }
  // Decimal: an exponent that is a multiple of 3, as large as keeps the mantissa whole.
  let value = digits;
  let exponent = suffix === "m" ? -3 : 0;
  while (value % 1000n === 0n && exponent < 18) {
    value /= 1000n;
    exponent += 3;
  }
  return `${value}${DECIMAL_SUFFIXES[exponent]}`;
}

/** Workspace resources with every quantity in canonical form. */
export function canonicalResources<T extends Record<string, Record<string, string>>>(resources: T): T {
  return Object.fromEntries(
    Object.entries(resources).map(([kind, amounts]) => [
      kind,
      Object.fromEntries(Object.entries(amounts).map(([k, v]) => [k, canonicalQuantity(v)])),
    ]),
  ) as T;
}
