// The framework library's version string (checkpoint metadata, reports).
namespace spore {
const char* framework_version() { return SPORE_VERSION; }
}  // namespace spore
