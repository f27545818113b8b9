import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

/** Helm chart values: nested maps whose leaves may be Pulumi inputs (a secret leaf stays secret alone). */
export type Values = { [key: string]: unknown };

const isMap = (v: unknown): v is Values =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !pulumi.Output.isInstance(v);

/** Merges `override` over `base`: maps key by key, anything else (lists, scalars, inputs) replaced. */
export function mergeValues(base: Values, override: Values): Values {
  const merged: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    // Own keys only: a chart key named like an Object.prototype member ("constructor") is an ordinary key.
    const own = Object.hasOwn(merged, key) ? merged[key] : undefined;
    merged[key] = isMap(value) && isMap(own) ? mergeValues(own, value) : value;
  }
  return merged;
}

/** A platform add-on: one pinned Helm chart, where it installs, and the values we run it with. */
export interface AddonSpec {
  /** Helm release name, also the resource name. */
  name: string;
  /** Chart name in `repository`, or a full `oci://` reference. */
  chart: string;
  /** HTTPS chart repository; absent for OCI charts. */
  repository?: string;
  /** Pinned chart version: never a range, `stable` or `latest`. */
  version: string;
  namespace: string;
  /** Our defaults; a user's values are merged over them. */
  values: Values;
}

export interface HelmAddonArgs {
  provider: k8s.Provider;
  /**
   * Values merged over the add-on's defaults (maps merge key by key; lists and scalars replace). Values a user
   * set as a secret arrive as a secret Output and keep the whole merged values secret.
   */
  values?: pulumi.Input<Values>;
  /** Add-ons that must be running first. */
  dependsOn?: pulumi.Input<pulumi.Resource>[];
}

/** Installs an {@link AddonSpec} as a Helm release in its own namespace. */
export class HelmAddon extends pulumi.ComponentResource {
  readonly release: k8s.helm.v3.Release;
  readonly namespace: string;

  constructor(spec: AddonSpec, args: HelmAddonArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:HelmAddon", spec.name, {}, opts);
    this.namespace = spec.namespace;
    this.release = new k8s.helm.v3.Release(
      spec.name,
      {
        name: spec.name,
        chart: spec.chart,
        version: spec.version,
        repositoryOpts: spec.repository ? { repo: spec.repository } : undefined,
        namespace: spec.namespace,
        createNamespace: true,
        values: pulumi.Output.isInstance(args.values)
          ? args.values.apply((values) => mergeValues(spec.values, values))
          : mergeValues(spec.values, (args.values as Values | undefined) ?? {}),
        // Roll back a failed upgrade instead of leaving a half-applied release behind.
        atomic: true,
        cleanupOnFail: true,
        timeout: 900,
        maxHistory: 10,
      },
      { parent: this, provider: args.provider, dependsOn: args.dependsOn },
    );
    this.registerOutputs({ release: this.release.status });
  }
}
