-- Argo CD health of a Pulumi Kubernetes Operator Stack (pulumi.com/v1), for the statuses PKO v2.9.0 writes
-- (pulumi-kubernetes-operator v2.9.0 operator/internal/controller/pulumi/stack_controller.go). Argo CD
-- v3.4.4 runs it with only Lua's base, table and package libraries (no string library): test/health/.
--   Healthy      the operator finished the current generation and its last run succeeded.
--   Degraded     the operator stopped (Stalled): a run failed a 4th time, the workspace failed to install,
--                or the spec is invalid. Nothing happens until the spec changes.
--   Progressing  anything else, including a failed run PKO will retry, and a workspace pod that never
--                starts (its git fetch or image pull failing): PKO reports no more than "waiting for
--                workspace readiness" then, so the message says since when and which pod to look at.
local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function describe(c, fallback)
  local text = c.reason or fallback
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  return text
end

local generation = obj.metadata.generation
local pod = tostring(obj.metadata.namespace) .. "/" .. tostring(obj.metadata.name) .. "-workspace-0"
if obj.status == nil or obj.status.observedGeneration == nil or obj.status.observedGeneration ~= generation then
  return { status = "Progressing", message = "Waiting for the operator to observe generation " .. tostring(generation) }
end

local last = obj.status.lastUpdate
local failedNow = last ~= nil and last.state == "failed" and last.generation == generation
local function lastError()
  if last.message ~= nil and last.message ~= "" then
    return "; last error: " .. last.message
  end
  return ""
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  local text = describe(stalled, "Stalled")
  if failedNow then
    text = text .. lastError()
  end
  -- The program's commit (the Freight's, which the promotion wrote into spec.commit): Argo CD's Degraded
  -- notification names it, its own revision being the stage branch's commit.
  return { status = "Degraded", message = text .. " (program commit " .. tostring(obj.spec.commit) ..
    ", workspace pod " .. pod .. ")" }
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  local text = describe(reconciling, "Reconciling")
  if failedNow then
    -- PKO counts failures from 0 at a generation's first failure and stops at 3: 4 runs in all.
    local failures = (last.failures or 0) + 1
    text = tostring(last.type) .. " failed " .. tostring(failures) .. " of at most 4 times for generation " ..
      tostring(generation) .. ", PKO retries with backoff" .. lastError()
  end
  local since = ""
  if reconciling.lastTransitionTime ~= nil then
    since = " since " .. reconciling.lastTransitionTime
  end
  return { status = "Progressing", message = text .. since .. " (workspace pod " .. pod .. ")" }
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" and last ~= nil and last.state == "succeeded" and last.generation == generation then
  return { status = "Healthy", message = describe(ready, "Ready") }
end

return { status = "Progressing", message = "Waiting for the operator to finish generation " .. tostring(generation) }
