-- Argo CD health of a Pulumi Kubernetes Operator Stack (pulumi.com/v1).
-- Healthy only once the operator has finished the current generation successfully; Degraded when the
-- operator reports Stalled; Progressing while it reconciles or has not yet observed the latest spec.
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
if obj.status == nil or obj.status.observedGeneration == nil or obj.status.observedGeneration ~= generation then
  return { status = "Progressing", message = "Waiting for the operator to observe generation " .. tostring(generation) }
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  return { status = "Degraded", message = describe(stalled, "Stalled") }
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  return { status = "Progressing", message = describe(reconciling, "Reconciling") }
end

local ready = condition("Ready")
local last = obj.status.lastUpdate
if ready ~= nil and ready.status == "True" and last ~= nil and last.state == "succeeded" and last.generation == generation then
  return { status = "Healthy", message = describe(ready, "Ready") }
end

return { status = "Progressing", message = "Waiting for the operator to finish generation " .. tostring(generation) }
