import type * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";

/**
 * `T` with a Pulumi `Input` allowed at every depth: any field, list or element may be an Output or a
 * Promise, while misspelt fields and wrong types stay compile errors.
 */
export type DeepInput<T> = unknown extends T
  ? unknown
  : T extends string | number | boolean | null | undefined
    ? pulumi.Input<T>
    : T extends readonly (infer U)[]
      ? pulumi.Input<DeepInput<U>[]>
      : pulumi.Input<{ [K in keyof T]: DeepInput<T[K]> }>;

/** Object metadata with an explicit name: our objects never rely on auto-naming. */
export type NamedObjectMeta = k8s.types.input.meta.v1.ObjectMeta & { name: pulumi.Input<string> };
