#pragma once
// The vocabulary of pipeline schedules: which family, how its model stages sit on the ranks, and the
// shape it runs at. Everything a family decides about itself lives in its registry entry
// (models/schedules/registry.hpp); the stage geometry here depends only on the StageLayout.
#include <cstdint>
#include <string>
#include <vector>

namespace plumb {

enum class ScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, zb_h2, zb_v, dualpipe, dualpipe_v, zb_1p, zb_2p };

// How a family places model stages on pipeline ranks:
//   straight     one stage per rank, stage r on rank r (GPipe, 1F1B, ZB-H1, ZB-H2, ZB-1p, ZB-2p);
//   round_robin  pp·vp stages, stage s on rank s mod pp (Megatron's interleaved schedule);
//   v_shape      2·pp stages going down the ranks and back up: rank r holds r and 2pp−1−r (ZB-V, DualPipeV);
//   mirrored     pp stages, rank r holds r and pp−1−r, the batch's two halves flowing in opposite
//                directions (DualPipe).
enum class StageLayout { straight, round_robin, v_shape, mirrored };

// The size a schedule is generated at: pipeline ranks, micro-batches per step, virtual stages per rank.
struct ScheduleShape {
  std::int64_t ranks = 1;
  std::int64_t microbatches = 1;
  std::int64_t vp = 1;
};

// A violated constraint of a schedule: the sentence (with the numbers) and the /parallel field it
// concerns ("pp", "vp", or "micro_batch" when the micro-batch count m is at fault).
struct ScheduleViolation {
  std::string field;
  std::string message;
};

// Model stages: pp (straight, mirrored), pp·vp (round_robin), 2·pp (v_shape).
std::int64_t stage_count(StageLayout layout, std::int64_t pp, std::int64_t vp);
// Stages held by pipeline rank r, in the order the rank runs them first.
std::vector<std::int64_t> stages_of_rank(StageLayout layout, std::int64_t r, std::int64_t pp, std::int64_t vp);
// 0 for the first half of DualPipe's micro-batches and for down-going stages of a V; 1 otherwise.
int stage_direction(StageLayout layout, std::int64_t stage, std::int64_t mb, std::int64_t ranks, std::int64_t microbatches);
// Which rank runs `stage` for micro-batch `mb`.
std::int64_t rank_of_stage(StageLayout layout, std::int64_t stage, std::int64_t mb, std::int64_t ranks,
                           std::int64_t microbatches);

}  // namespace plumb
