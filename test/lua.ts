// Runs an Argo CD health script the way Argo CD does: `obj` bound to the resource, the script's return
// value read back as { status, message }.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- fengari ships CommonJS without types
const fengari = require("fengari") as Fengari;

interface Fengari {
  lua: {
    LUA_OK: number;
    lua_pushnil(L: unknown): void;
    lua_pushboolean(L: unknown, b: boolean): void;
    lua_pushinteger(L: unknown, n: number): void;
    lua_pushnumber(L: unknown, n: number): void;
    lua_pushstring(L: unknown, s: Uint8Array): void;
    lua_createtable(L: unknown, narr: number, nrec: number): void;
    lua_rawseti(L: unknown, index: number, i: number): void;
    lua_setfield(L: unknown, index: number, k: Uint8Array): void;
    lua_setglobal(L: unknown, name: Uint8Array): void;
    lua_getfield(L: unknown, index: number, k: Uint8Array): number;
    lua_pcall(L: unknown, nargs: number, nresults: number, msgh: number): number;
    lua_tojsstring(L: unknown, index: number): string | null;
    lua_pop(L: unknown, n: number): void;
  };
  lauxlib: { luaL_newstate(): unknown; luaL_loadstring(L: unknown, s: Uint8Array): number };
  lualib: { luaL_openlibs(L: unknown): void };
  to_luastring(s: string): Uint8Array;
}

const { lua, lauxlib, lualib, to_luastring } = fengari;

function push(L: unknown, value: unknown): void {
  if (value === null || value === undefined) lua.lua_pushnil(L);
  else if (typeof value === "boolean") lua.lua_pushboolean(L, value);
  else if (typeof value === "number") {
    if (Number.isInteger(value)) lua.lua_pushinteger(L, value);
    else lua.lua_pushnumber(L, value);
  } else if (typeof value === "string") lua.lua_pushstring(L, to_luastring(value));
  else if (Array.isArray(value)) {
    lua.lua_createtable(L, value.length, 0);
    value.forEach((item, i) => {
      push(L, item);
      lua.lua_rawseti(L, -2, i + 1);
    });
  } else {
    lua.lua_createtable(L, 0, 0);
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      push(L, item);
      lua.lua_setfield(L, -2, to_luastring(key));
    }
  }
}

export function runHealthScript(script: string, obj: unknown): { status: string; message: string } {
  const L = lauxlib.luaL_newstate();
  lualib.luaL_openlibs(L);
  push(L, obj);
  lua.lua_setglobal(L, to_luastring("obj"));
  if (
    lauxlib.luaL_loadstring(L, to_luastring(script)) !== lua.LUA_OK ||
    lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK
  ) {
    throw new Error(`health script failed: ${lua.lua_tojsstring(L, -1)}`);
  }
  lua.lua_getfield(L, -1, to_luastring("status"));
  const status = lua.lua_tojsstring(L, -1) ?? "";
  lua.lua_pop(L, 1);
  lua.lua_getfield(L, -1, to_luastring("message"));
  const message = lua.lua_tojsstring(L, -1) ?? "";
  return { status, message };
}
