#pragma once
// Items (a pipeline replica, a GPU) that a simulation would run identically, found before it runs.
// Items start with a colour (what they run: their costs, their speed); groups join items (a
// collective's members, each at a slot such as its pipeline rank). Colour refinement (the
// one-dimensional Weisfeiler–Leman algorithm) splits a colour until every item of a colour sees,
// in every group it belongs to, the same multiset of (colour, slot): an equitable partition. When
// every interaction between items is a group barrier (a collective starts once all its members
// reach it), items of one class have the same timeline, so one per class need be simulated, with
// each group's barrier over the classes it holds.
#include <cstdint>
#include <vector>

namespace plumb::sim {

struct GroupMember {
  std::int32_t item = 0;
  std::int32_t slot = 0;  // where in the group the item sits (its pipeline rank); part of what it sees
};
struct ItemGroup {
  std::int32_t kind = 0;  // groups of different kinds never merge (a TP group, a DP group)
  std::vector<GroupMember> members;
};

struct ItemClasses {
  std::vector<std::int32_t> of;     // per item: its class; classes numbered in the order of their first item
  std::vector<std::int32_t> first;  // per class: its first item (the one simulated)
  std::vector<std::int64_t> size;   // per class: how many items it stands for
  int rounds = 0;                   // refinement rounds until no class split
};

// `colour`: per item, any integer (equal = alike to begin with).
ItemClasses equitable_classes(const std::vector<std::int64_t>& colour, const std::vector<ItemGroup>& groups);

// The groups as the classes see them: each group's members as (class, slot), once each; groups whose
// class view is the same are one (equitable classes make every class's view of a kind unique), and a
// group left with one member (all alike) needs no barrier and is dropped.
std::vector<ItemGroup> class_groups(const std::vector<ItemGroup>& groups, const ItemClasses& classes);

}  // namespace plumb::sim
