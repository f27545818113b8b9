-- Argo CD health of a Pulumi Kubernetes Operator Stack (pulumi.com/v1), for the statuses PKO v2.9.0 writes
-- (pulumi-kubernetes-operator v2.9.0 operator/internal/controller/pulumi/stack_controller.go). Argo CD
-- v3.4.4 runs it with only Lua's base, table and package libraries (no string library): test/health/.
--   Healthy      the operator finished the current generation and promotion (its reconcile request), and its
--                last run succeeded.
--   Degraded     the operator stopped (Stalled): a run failed a 4th time, the workspace failed to install,
--                or the spec is invalid. Nothing happens until the spec changes.
--   Degraded     a drift check's preview failed: drift, said at once (see below).
--   Progressing  anything else, including a failed run PKO will retry, and a workspace pod that never
--                starts (its git fetch or image pull failing): PKO reports no more than "waiting for
--                workspace readiness" then, so the message says since when and which pod to look at.
-- Argo CD shows a script's Lua error in place of a health, and a Stack the CRD admits may lack spec, status
-- or any condition: every read goes through field() and text(), which never index or join what is not there
-- or not of the type PKO writes (test/health/generated_test.go hands the script such objects).
local function field(value, ...)
  for _, key in ipairs({ ... }) do
    if type(value) ~= "table" then
      return nil
    end
    value = value[key]
  end
  return value
end

-- A value as it reads in a message: a string or a number as it is, anything else as nil.
local function text(value)
  if type(value) == "string" or type(value) == "number" then
    return value
  end
  return nil
end

local function shown(value)
  return tostring(text(value))
end

local function condition(kind)
  local conditions = field(obj, "status", "conditions")
  if type(conditions) ~= "table" then
    return nil
  end
  for _, c in ipairs(conditions) do
    if type(c) == "table" and c.type == kind then
      return c
    end
  end
  return nil
end

local function describe(c, fallback)
  local result = tostring(text(c.reason) or fallback)
  local message = text(c.message)
  if message ~= nil and message ~= "" then
    result = result .. ": " .. message
  end
  return result
end

local generation = field(obj, "metadata", "generation")
local pod = shown(field(obj, "metadata", "namespace")) .. "/" .. shown(field(obj, "metadata", "name")) ..
  "-workspace-0"
local observed = field(obj, "status", "observedGeneration")
if observed == nil or observed ~= generation then
  return { status = "Progressing", message = "Waiting for the operator to observe generation " .. shown(generation) }
end

local last = field(obj, "status", "lastUpdate")
if type(last) ~= "table" then
  last = nil
end
-- PKO's reconcile request, which each promotion sets to its own name (lib/pipeline/promotion-rollback.ts): a
-- value its last run did not carry makes PKO run the Stack again, at the same generation and commit
-- (v2.9.0 stack_controller.go isSynced), so until that run ends the last result is an earlier promotion's.
local request = text(field(obj, "metadata", "annotations", "pulumi.com/reconciliation-request")) or ""
local ranNow = last ~= nil and (text(last.reconcileRequest) or "") == request
local failedNow = ranNow and last.state == "failed" and last.generation == generation
local function lastError()
  local message = text(last.message)
  if message ~= nil and message ~= "" then
    return "; last error: " .. message
  end
  return ""
end

-- A drift check (lib/pipeline/drift.ts): a preview Stack whose runs expect no changes (its spec, which the
-- admission policy holds to the plan), run again at the same commit every interval. Its preview failing is
-- what it exists to say, so Degraded at once, naming the Stack, with the CLI's output (the resources it would
-- change back, and "no changes were expected" when that is why). PKO's own answer to a concurrent update
-- (pulumi-kubernetes-operator v2.9.0 agent/pkg/server/pulumi_errors.go) is no drift: PKO retries it.
local driftCheck = field(obj, "spec", "preview") == true and
  field(obj, "spec", "updateTemplate", "spec", "expectNoChanges") == true
if driftCheck and failedNow and last.type == "preview" and
  text(last.message) ~= "Another update is currently in progress" then
  return { status = "Degraded", message = "drift: drift check " .. shown(field(obj, "metadata", "name")) ..
    " of stage " .. shown(field(obj, "metadata", "labels", "app.kubernetes.io/instance")) ..
    " found Pulumi stack " .. shown(field(obj, "spec", "stack")) .. " no longer as program commit " ..
    shown(field(obj, "spec", "commit")) .. " left it (changed outside Pulumi), or could not check it: " ..
    "bring it back with `npm run rollback -- " .. shown(field(obj, "metadata", "annotations", "platform/environment")) ..
    " --reconcile`, through the preview stop" ..
    lastError() .. " (workspace pod " .. pod .. ")" }
end
-- Checking again, every interval, at the generation and reconcile request its last check passed: still
-- Healthy, so the stage does not turn Progressing every interval. A promotion's new reconcile request is
-- Progressing until its check has run, like any Stack's: the stage's verification waits for it.
local reconcilingNow = condition("Reconciling")
if driftCheck and ranNow and last.state == "succeeded" and last.generation == generation and
  reconcilingNow ~= nil and reconcilingNow.status == "True" then
  return { status = "Healthy", message = "drift check running again; the last one found no drift" }
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  local result = describe(stalled, "Stalled")
  if failedNow then
    result = result .. lastError()
  end
  -- The program's commit (the Freight's, which the promotion wrote into spec.commit): Argo CD's Degraded
  -- notification names it, its own revision being the stage branch's commit.
  return { status = "Degraded", message = result .. " (program commit " .. shown(field(obj, "spec", "commit")) ..
    ", workspace pod " .. pod .. ")" }
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  local result = describe(reconciling, "Reconciling")
  if failedNow then
    -- PKO counts failures from 0 at a generation's first failure and stops at 3: 4 runs in all.
    local failures = 1
    if type(last.failures) == "number" then
      failures = last.failures + 1
    end
    result = shown(last.type) .. " failed " .. tostring(failures) .. " of at most 4 times for generation " ..
      shown(generation) .. ", PKO retries with backoff" .. lastError()
  end
  local since = ""
  if text(reconciling.lastTransitionTime) ~= nil then
    since = " since " .. reconciling.lastTransitionTime
  end
  return { status = "Progressing", message = result .. since .. " (workspace pod " .. pod .. ")" }
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" and ranNow and last.state == "succeeded" and last.generation == generation then
  return { status = "Healthy", message = describe(ready, "Ready") }
end
if last ~= nil and not ranNow then
  return { status = "Progressing", message = "Waiting for the operator to run reconcile request " .. request }
end

return { status = "Progressing", message = "Waiting for the operator to finish generation " .. shown(generation) }
