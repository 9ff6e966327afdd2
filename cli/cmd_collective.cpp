#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>

#include "cli/commands.hpp"
#include "models/input/catalogue.hpp"
#include "models/costs/collective.hpp"

namespace plumb::cli {
namespace {

// --cluster: a fabric profile (name or file, with --gpu) or a cluster file {gpu, nodes, fabric}.
std::pair<GpuSpec, FabricSpec> hardware(const Args& args) {
  Diagnostics diagnostics;
  SourceFile src{"--cluster", std::filesystem::current_path(), &diagnostics, {}};
  std::string ref = args.value("--cluster", "dgx-h100-ndr");
  std::string gpu_ref = args.value("--gpu", args.flag("--cluster") ? "" : "h100-sxm");  // the default cluster is a DGX H100
  if (ref.ends_with(".json") && is_file(ref)) {
    Json doc = load_json_file(ref, src);
    if (doc.is_object() && doc.contains("fabric")) {
      std::optional<Cluster> c = read_cluster(Json(ref), "", src);
      diagnostics.throw_if_any();
      return {c->gpu, c->fabric};
    }
  }
  std::optional<FabricSpec> fabric = read_fabric(Json(ref), "", src);
  diagnostics.throw_if_any();
  if (gpu_ref.empty())
    throw UsageError(fmt::format("--cluster {} is a fabric; say which GPUs it joins with --gpu (e.g. --gpu h100-sxm)", ref));
  SourceFile gpu_src{"--gpu", std::filesystem::current_path(), &diagnostics, {}};
  std::optional<GpuSpec> gpu = read_gpu(Json(gpu_ref), "", gpu_src);
  diagnostics.throw_if_any();
  return {*gpu, *fabric};
}

double parse_bytes(const std::string& text) {
  std::string why;
  if (auto b = parse_quantity(text, Dimension::bytes, &why)) return *b;
  if (auto plain = parse_quantity(text, Dimension::count, nullptr)) return *plain;  // a bare number is bytes
  throw UsageError(fmt::format("--bytes: {}", why));
}

int run_collective(const Args& args) {
  auto [gpu, fabric] = hardware(args);
  CollectiveOp op = choose("--op", args.value("--op", "all_reduce"), collective_op_names());
  CollectiveAlgo algo = choose("--algo", args.value("--algo", "auto"), collective_algo_names());
  std::optional<Protocol> protocol;
  if (args.flag("--proto"))
    protocol = choose("--proto", args.value("--proto"),
                           std::vector<std::pair<std::string, Protocol>>{{"LL", Protocol::ll}, {"LL128", Protocol::ll128}, {"Simple", Protocol::simple}});
  std::int64_t gpus = args.integer("--gpus", fabric.gpus_per_node, 1, 1'000'000);
  std::int64_t nodes = args.integer("--nodes", (gpus + fabric.gpus_per_node - 1) / fabric.gpus_per_node, 1, 1'000'000);
  if (gpus % nodes != 0 || gpus / nodes > fabric.gpus_per_node)
    throw UsageError(fmt::format("{} GPUs do not spread evenly over {} nodes of {} GPUs", gpus, nodes, fabric.gpus_per_node));
  std::vector<double> sizes;
  if (args.flag("--sweep") && args.flag("--bytes")) throw UsageError("give --bytes or --sweep, not both");
  if (args.flag("--bytes")) sizes.push_back(parse_bytes(args.value("--bytes")));
  else
    for (double b = 8; b <= 8.0 * 1073741824.0; b *= 2) sizes.push_back(b);  // nccl-tests -b 8 -e 8G -f 2
  CollectiveLinks links = CollectiveLinks::of(gpu, fabric);
  GroupPlacement group{gpus, nodes};
  Json rows = Json::array();
  std::string table = fmt::format("# {} on {} GPUs over {} node{} ({} + {}), algorithm {}\n", collective_op_name(op), gpus, nodes,
                                  nodes == 1 ? "" : "s", gpu.name, fabric.name, collective_algo_name(algo));
  table += fmt::format("# {:>12} {:>12} {:>12} {:>12}  {}\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm");
  for (double bytes : sizes) {
    CollectiveCost c = collective_cost(op, bytes, group, links, algo, protocol);
    std::string name = fmt::format("{}/{}", collective_algo_name(c.algo), protocol_name(c.protocol));
    rows.push_back({{"bytes", bytes}, {"time_s", c.seconds}, {"algbw_gbps", c.algbw / 1e9}, {"busbw_gbps", c.busbw / 1e9},
                    {"algorithm", name}});
    table += fmt::format("  {:>12.0f} {:>12.2f} {:>12.2f} {:>12.2f}  {}\n", bytes, c.seconds * 1e6, c.algbw / 1e9, c.busbw / 1e9, name);
  }
  if (args.flag("--json")) std::cout << Json{{"op", std::string(collective_op_name(op))}, {"gpus", gpus}, {"nodes", nodes}, {"rows", rows}}.dump(2) << "\n";
  else std::cout << table;
  return kOk;
}

}  // namespace

const Command& collective_command() {
  static const Command command{
      {"collective",
       "plumb collective --cluster FABRIC|FILE [--gpu GPU] --op OP --gpus N [--nodes K] [--bytes 1GiB | --sweep]\n"
       "                        [--algo auto|ring|tree|nvls|hier] [--proto LL|LL128|Simple] [--json]",
       "Time of one collective on a group of GPUs, like nccl-tests: time, algbw, busbw and the algorithm\n"
       "chosen, over message sizes 8 B … 8 GiB (--sweep, the default) or one size (--bytes).\n"
       "OP: all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv. The group fills\n"
       "whole nodes unless --nodes spreads it further (e.g. one GPU per node: --nodes equal to --gpus).",
       {},
       {{"--cluster", "NAME|FILE", "a fabric profile (with --gpu) or a cluster file (default dgx-h100-ndr)"},
        {"--gpu", "NAME|FILE", "the GPU profile, when --cluster names a fabric (default cluster: h100-sxm)"},
        {"--op", "OP", "the collective (default all_reduce)"},
        {"--gpus", "N", "GPUs in the group (default one node)"},
        {"--nodes", "K", "nodes the group spans (default: as few as fit)"},
        {"--bytes", "SIZE", "one message size, e.g. 1GiB"},
        {"--sweep", "", "message sizes 8 B … 8 GiB, doubling (the default)"},
        {"--algo", "ALGO", "auto (NCCL-like choice), ring, tree, nvls or hier"},
        {"--proto", "PROTO", "fix the protocol: LL, LL128 or Simple (default: the fastest)"},
        {"--json", "", "print rows[i].{bytes, time_s, algbw_gbps, busbw_gbps, algorithm}"}}},
      run_collective};
  return command;
}

}  // namespace plumb::cli
