// dezero/core/grad_hooks.hpp - internal: the table of grad-ready hooks
// (Variable::register_post_accumulate_grad_hook) as backward.cpp reads it; the table
// itself is in variable.cpp.
#pragma once

#include <atomic>
#include <cstdint>

#include "dezero/core.hpp"

namespace dezero::detail {

// The number of hooks registered, over all variables. backward() counts the uses of
// leaves only while it is not 0: one relaxed load is all the common path pays.
extern std::atomic<std::int64_t> grad_hooks_live;

// Hooks get increasing ids; those below the returned limit are registered now. A backward
// pass calls only the hooks registered before it began.
std::uint64_t grad_hook_id_limit();

// Calls the hooks of v's node with an id below id_limit, in registration order, on v. A hook
// removed meanwhile (by an earlier one) is skipped; what a hook throws propagates.
void run_grad_ready_hooks(const Variable& v, std::uint64_t id_limit);

}  // namespace dezero::detail
