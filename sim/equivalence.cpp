#include "sim/equivalence.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace plumb::sim {
namespace {

// Classes numbered by their first item, from any labelling of the items.
ItemClasses renumber(const std::vector<std::int64_t>& label) {
  ItemClasses out;
  out.of.resize(label.size());
  std::map<std::int64_t, std::int32_t> id;
  for (std::size_t i = 0; i < label.size(); ++i) {
    auto [it, fresh] = id.emplace(label[i], static_cast<std::int32_t>(out.first.size()));
    if (fresh) {
      out.first.push_back(static_cast<std::int32_t>(i));
      out.size.push_back(0);
    }
    out.of[i] = it->second;
    ++out.size[static_cast<std::size_t>(it->second)];
  }
  return out;
}

}  // namespace

ItemClasses equitable_classes(const std::vector<std::int64_t>& colour, const std::vector<ItemGroup>& groups) {
  ItemClasses classes = renumber(colour);
  // Each item's memberships: (group, slot).
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> member_of(colour.size());
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const GroupMember& m : groups[g].members) {
      if (m.item < 0 || static_cast<std::size_t>(m.item) >= colour.size()) throw std::out_of_range("equitable_classes: a member past the items");
      member_of[static_cast<std::size_t>(m.item)].emplace_back(static_cast<std::int32_t>(g), m.slot);
    }
  std::vector<std::int64_t> group_view(groups.size());
  std::vector<std::int64_t> key;
  while (true) {
    ++classes.rounds;
    // What each group holds, as a multiset of (class, slot).
    std::map<std::vector<std::int64_t>, std::int64_t> views;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      key.clear();
      key.push_back(groups[g].kind);
      for (const GroupMember& m : groups[g].members)
        key.push_back(static_cast<std::int64_t>(classes.of[static_cast<std::size_t>(m.item)]) << 32 | static_cast<std::uint32_t>(m.slot));
      std::sort(key.begin() + 1, key.end());
      group_view[g] = views.emplace(key, static_cast<std::int64_t>(views.size())).first->second;
    }
    // An item's new colour: its class and, for every group it is in, its slot there and what the group holds.
    std::map<std::vector<std::int64_t>, std::int64_t> signatures;
    std::vector<std::int64_t> label(colour.size());
    for (std::size_t i = 0; i < colour.size(); ++i) {
      key.clear();
      for (auto [g, slot] : member_of[i]) key.push_back(group_view[static_cast<std::size_t>(g)] << 32 | static_cast<std::uint32_t>(slot));
      std::sort(key.begin(), key.end());
      key.insert(key.begin(), classes.of[i]);
      label[i] = signatures.emplace(key, static_cast<std::int64_t>(signatures.size())).first->second;
    }
    ItemClasses next = renumber(label);
    next.rounds = classes.rounds;
    const bool stable = next.first.size() == classes.first.size();  // a refinement: equal counts, equal partition
    classes = std::move(next);
    if (stable) return classes;
  }
}

std::vector<ItemGroup> class_groups(const std::vector<ItemGroup>& groups, const ItemClasses& classes) {
  std::set<std::pair<std::int32_t, std::vector<std::pair<std::int32_t, std::int32_t>>>> seen;
  std::vector<ItemGroup> out;
  for (const ItemGroup& g : groups) {
    std::vector<std::pair<std::int32_t, std::int32_t>> view;
    for (const GroupMember& m : g.members) view.emplace_back(classes.of[static_cast<std::size_t>(m.item)], m.slot);
    std::sort(view.begin(), view.end());
    view.erase(std::unique(view.begin(), view.end()), view.end());
    if (view.size() < 2 || !seen.emplace(g.kind, view).second) continue;
    ItemGroup q{g.kind, {}};
    for (auto [c, slot] : view) q.members.push_back({c, slot});
    out.push_back(std::move(q));
  }
  return out;
}

}  // namespace plumb::sim
