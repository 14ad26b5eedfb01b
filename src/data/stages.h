// Constructors of the pipeline nodes, one file each (map.cc, shuffle.cc, batch.cc, ...).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/node.h"

namespace spore::data::detail {

using NodePtr = std::shared_ptr<const Node>;

NodePtr make_map_node(NodePtr child, MapFn fn, std::vector<std::string> input_columns,
                      std::vector<std::string> output_columns, int num_parallel_workers,
                      std::vector<ColumnSpec> output_specs);
NodePtr make_shuffle_node(NodePtr child, int64_t buffer_size, uint64_t seed);
NodePtr make_batch_node(NodePtr child, int64_t batch_size, bool drop_remainder);
NodePtr make_repeat_node(NodePtr child, int64_t count);
NodePtr make_project_node(NodePtr child, std::vector<std::string> columns);
// A source over whole arrays: row i is slice i of every tensor (equal first extents, checked
// by the caller). kind names the source in errors ("numpy", "csv", "idx").
NodePtr make_table_node(std::string kind, std::vector<std::string> names,
                        std::vector<Tensor> columns);

}  // namespace spore::data::detail
