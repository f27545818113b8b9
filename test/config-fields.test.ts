// The stack config values several projects validate the same way (lib/config.ts configFields and hostname),
// read as the CLI hands them over: what each accepts, and the message a careless value gets.
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { configFields, hostname, internetAllowList } from "../lib/config";

const messageOf = (schema: z.ZodType, value: unknown) => {
  const result = schema.safeParse(value);
  return result.success ? undefined : result.error.issues.map((i) => i.message).join("; ");
};

const fields: [what: string, schema: z.ZodType, accepted: unknown[], refused: [unknown, RegExp][]][] = [
  [
    "an upstream stack",
    configFields.stackName("cluster"),
    ["acme/cluster/dev", "acme-corp/cluster/dev.eu_1"],
    [
      ["cluster/dev", /must name the cluster stack as <org>\/<project>\/<stack>/],
      ["acme/cluster/dev/extra", /must name the cluster stack/],
      ["acme corp/cluster/dev", /must name the cluster stack/],
    ],
  ],
  [
    "an IAM role ARN",
    configFields.iamRoleArn,
    ["arn:aws:iam::123456789012:role/Admins", "arn:aws-us-gov:iam::123456789012:role/ci/Deployer"],
    [
      [
        "arn:aws:iam::123456789012:user/alice",
        /must be an IAM role ARN such as arn:aws:iam::123456789012:role\/Admins/,
      ],
      ["arn:aws:iam::12345678901:role/Admins", /must be an IAM role ARN/],
      [" arn:aws:iam::123456789012:role/Admins", /must be an IAM role ARN/],
      ["arn:aws:iam::123456789012:role/Admins trailing", /must be an IAM role ARN/],
    ],
  ],
  [
    "an IAM policy ARN",
    configFields.iamPolicyArn,
    ["arn:aws:iam::aws:policy/ReadOnlyAccess", "arn:aws-cn:iam::123456789012:policy/team/Custom"],
    [
      ["ReadOnlyAccess", /must be an IAM policy ARN such as arn:aws:iam::aws:policy\/ReadOnlyAccess/],
      ["arn:aws:iam::123456789012:role/Admins", /must be an IAM policy ARN/],
      [" arn:aws:iam::aws:policy/ReadOnlyAccess", /must be an IAM policy ARN/],
      ["arn:aws:iam::aws:policy/ReadOnlyAccess ", /must be an IAM policy ARN/],
      ["arn:aws:iam::1234:policy/Custom", /must be an IAM policy ARN/],
    ],
  ],
  [
    "a DNS label",
    configFields.dnsLabel,
    ["a", "0", "pulumi-stacks", "x".repeat(63)],
    [
      ["-stacks", /must be a DNS label: 1-63 lower-case letters, digits and '-'/],
      ["stacks-", /must be a DNS label/],
      ["Stacks", /must be a DNS label/],
      ["x".repeat(64), /must be a DNS label/],
    ],
  ],
  [
    "a host name",
    hostname,
    [
      "kargo.example.com",
      "kargo-1.internal.example",
      `${"k".repeat(63)}.example.com`,
      "example.com",
      "k.8.example.com",
      // 253 characters, the most a DNS name may have.
      `${"k.".repeat(125)}com`,
    ],
    [
      ["https://kargo.example.com", /must be a DNS name such as kargo\.example\.com: .*no scheme or port/],
      ["kargo.example.com:443", /no scheme or port/],
      ["Kargo.example.com", /must be a DNS name such as kargo\.example\.com/],
      ["kargo.example.123", /must be a DNS name such as kargo\.example\.com/],
      ["kargo", /must be a fully qualified DNS name such as kargo\.example\.com, without a scheme/],
      [`kargo.${"k".repeat(64)}.example.com`, /has a label of more than 63 characters \("k{20}\.\.\."\)/],
      // The message names the label that is too long, not the longest allowed one before it.
      [`${"a".repeat(63)}.${"k".repeat(64)}.com`, /has a label of more than 63 characters \("k{20}\.\.\."\)/],
      [`${"k.".repeat(127)}com`, /is 257 characters; a DNS name has at most 253/],
    ],
  ],
  [
    "an internet allow list",
    internetAllowList(3, "a security group's rules"),
    [["0.0.0.0/0"], ["140.82.112.0/20", "192.30.252.0/22"]],
    [
      // 0.0.0.0/8 is "this network", not the internet; only 0.0.0.0/0 stands for any address.
      [["0.0.0.0/8"], /is an unspecified range, which never reaches an internet-facing endpoint/],
      [["10.0.0.0/8"], /is a private range, which never reaches an internet-facing endpoint/],
      [["1.1.1.1/32", "1.1.1.1/32"], /must not repeat a CIDR/],
      [
        ["1.0.0.0/8", "2.0.0.0/8", "3.0.0.0/8", "4.0.0.0/8"],
        /must list at most 3 CIDRs \(a security group's rules\)/,
      ],
    ],
  ],
];

describe.each(fields)("%s", (_, schema, accepted, refused) => {
  it.each(accepted.map((v) => [v]))("accepts %j", (value) => {
    expect(messageOf(schema, value)).toBeUndefined();
  });
  it.each(refused)("refuses %j, saying what it must be", (value, message) => {
    expect(messageOf(schema, value)).toMatch(message);
  });
});
