#include "kernels/exec_context.hpp"

namespace attn {

const CompiledProgram& KernelLoader::load(const JitProgram& program) {
  const std::string key = jit_.cache_key(program);
  auto it = loaded_.find(key);
  if (it != loaded_.end()) return it->second.compiled;
  Loaded entry;
  entry.compiled = jit_.compile(program);
  entry.module = std::make_unique<Module>(context_, entry.compiled.cubin);
  return loaded_.emplace(key, std::move(entry)).first->second.compiled;
}

CUfunction KernelLoader::function(const JitProgram& program, const std::string& name_expression) {
  load(program);
  const Loaded& entry = loaded_.at(jit_.cache_key(program));
  auto name = entry.compiled.lowered_names.find(name_expression);
  ATTN_ASSERT(name != entry.compiled.lowered_names.end(),
              "program " + program.name + " has no kernel " + name_expression);
  return entry.module->function(name->second);
}

CUdeviceptr Workspace::get(size_t bytes) {
  if (bytes > buffer_.bytes()) buffer_ = DeviceBuffer(context_, bytes);
  return buffer_.address();
}

}  // namespace attn
