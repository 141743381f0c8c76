#include "kernels/exec_context.hpp"

namespace attn {

KernelLoader::Loaded& KernelLoader::entry(const JitProgram& program) {
  const std::string key = jit_.cache_key(program);
  auto it = loaded_.find(key);
  if (it != loaded_.end()) return it->second;
  Loaded loaded;
  loaded.compiled = jit_.compile(program);
  loaded.module = std::make_unique<Module>(context_, loaded.compiled.cubin);
  return loaded_.emplace(key, std::move(loaded)).first->second;
}

const CompiledProgram& KernelLoader::load(const JitProgram& program) {
  return entry(program).compiled;
}

CUfunction KernelLoader::function(const JitProgram& program, const std::string& name_expression) {
  const Loaded& loaded = entry(program);
  auto name = loaded.compiled.lowered_names.find(name_expression);
  ATTN_ASSERT(name != loaded.compiled.lowered_names.end(),
              "program " + program.name + " has no kernel " + name_expression);
  return loaded.module->function(name->second);
}

CUdeviceptr Workspace::get(size_t bytes) {
  if (bytes > buffer_.bytes()) buffer_ = DeviceBuffer(context_, bytes);
  return buffer_.address();
}

}  // namespace attn
