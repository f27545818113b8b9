// The environment the tests run git in: a fixed author and committer, and none of the machine's own git
// configuration, so commits and their hashes do not depend on who runs the suite.
export function gitEnv(name = "t", email = "t@example.com"): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: name,
    GIT_AUTHOR_EMAIL: email,
    GIT_COMMITTER_NAME: name,
    GIT_COMMITTER_EMAIL: email,
  };
}
