// @ts-check
import js from "@eslint/js";
import pulumi from "@pulumi/eslint-plugin";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/**",
      "lib/crds/generated/**",
      "**/*.js",
      "**/*.mjs",
      ".stryker-tmp/**",
      "reports/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: {
      // One program from tsconfig.json, as `npm run typecheck` builds it: the project service (projectService)
      // took twice the CPU here, 71 s against 35 s.
      parserOptions: { project: ["./tsconfig.json"], tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@pulumi": pulumi },
    rules: {
      // An Output interpolated into a plain template literal renders as a warning string, not its value.
      "@pulumi/no-output-in-template-literal": "error",
      "@pulumi/no-output-instance-in-template-literal": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", ignoreRestSiblings: true }],
    },
  },
  {
    // Tests read plans, manifests and mocked registrations, which are untyped JSON by nature.
    files: ["test/**/*.ts", "programs/**/*.test.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
