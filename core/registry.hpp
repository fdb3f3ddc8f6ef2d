// core/registry.hpp — variants register themselves; everything else iterates.
//
// A variant file ends with one line such as
//
//   static const Register<ConvProblem> reg{{.name = "01b_openmp", .device = Device::cpu,
//                                           .lesson = 1, .supports = f32_only, .run = run}};
//
// and from then on the tests, the benchmarks, `convlab list/run/tour` and the
// lessons' tables know it. No list of variants is kept by hand anywhere.
// CMake builds variant files into OBJECT libraries so the linker cannot drop
// these otherwise-unreferenced registration objects.
#pragma once

#include <cstddef>
#include <source_location>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/dtype.hpp"

namespace convlab {

enum class Threads { single, all };       // which measured peak a variant is judged against
enum class ShapeTable { test, bench, tour };

// Per operation: the typed buffers a variant receives (Args<P>) and how the
// harness builds, checks and names problems (OpTraits<P>). Both are specialised
// in ops/<op>.hpp.
template <class P> struct Args;
template <class P> struct OpTraits;

template <class P> struct Variant {
  std::string name;                              // "01a_seven_loop"; baselines: the library's name
  Device device = Device::cpu;                   // where run() expects its pointers to live
  int lesson = 0;                                // the lesson that introduces it
  bool (*supports)(const P&) = nullptr;          // dtype, alignment, stride, size limits
  void (*run)(const P&, const Args<P>&) = nullptr;
  std::size_t (*workspace_bytes)(const P&) = nullptr;  // extra scratch the harness allocates
  Threads threads = Threads::single;
  const char* idea = "";                         // one line for `convlab list`
  bool baseline = false;                         // a vendor/library reference point
  // The DRAM bytes this variant's algorithm moves by design, when that is more
  // than the problem's compulsory min_bytes() (e.g. a layer-by-layer variant
  // that stores and re-reads an intermediate tensor). nullptr: min_bytes().
  double (*model_bytes)(const P&) = nullptr;
  const char* file = "";                         // the source file that registered it (set by Register)
};

// Start-up refusal of a second variant with an id already taken: prints one
// line naming the id and both files, and ends the program (exit status 2).
// Called during static initialisation, before main(), so nothing can run with
// two variants answering to one name. Defined in core/registry.cpp.
[[noreturn]] void refuse_duplicate_variant(const std::string& id, const char* first_file, const char* second_file);

// What the type-erased side (app, tests, benchmarks) knows about a variant.
struct VariantInfo {
  std::string op, name;
  Device device = Device::cpu;
  int lesson = 0;
  Threads threads = Threads::single;
  std::string idea;
  bool baseline = false;
  std::string id() const { return op + "/" + device_name(device) + "/" + name; }
};

// Adds P's operation to the type-erased list the first time one of its
// variants registers. Defined in core/harness.hpp and instantiated once per
// operation in ops/<op>.cpp, so variant files compile none of the harness.
template <class P> void register_op_handle();

template <class P> class Registry {
 public:
  static std::vector<Variant<P>>& variants() {
    static std::vector<Variant<P>> list;  // function-local: safe during static initialisation
    return list;
  }
  static void add(Variant<P> v) {
    for (const Variant<P>& other : variants())
      if (other.device == v.device && other.name == v.name)
        refuse_duplicate_variant(std::string(OpTraits<P>::name) + "/" + device_name(v.device) + "/" + v.name,
                                 other.file, v.file);
    variants().push_back(std::move(v));
    register_op_handle<P>();
  }
};

// The registering file is recorded from the call site, so a duplicate id can
// name both files (a copied rung whose name was not changed).
template <class P> struct Register {
  explicit Register(Variant<P> v, std::source_location where = std::source_location::current()) {
    v.file = where.file_name();
    Registry<P>::add(std::move(v));
  }
};

// A registered variant by device and name, for a rung composed of other rungs
// (lesson 10's layer-by-layer block calls the conv2d and ffn rungs it names).
// Looked up at run time, never during static initialisation. nullptr if absent.
template <class P> const Variant<P>* find_variant(Device device, const std::string& name) {
  for (const Variant<P>& v : Registry<P>::variants())
    if (v.device == device && v.name == name) return &v;
  return nullptr;
}

// A rung composed of other rungs (lessons 10 and 11's layer-by-layer blocks) calls the
// rung it names, which must be registered, and sizes its scratch from theirs.
template <class P>
const Variant<P>& required_variant(Device device, const std::string& who, const char* op, const char* name) {
  const Variant<P>* v = find_variant<P>(device, name);
  if (!v)
    throw std::runtime_error(who + ": the rung " + op + "/" + device_name(device) + "/" + name + " is not registered");
  return *v;
}
template <class P> std::size_t workspace_of(const Variant<P>& v, const P& p) {
  return v.workspace_bytes ? v.workspace_bytes(p) : 0;
}

// Helpers for the common `supports` predicates.
template <class P> bool f32_only(const P& p) { return p.dtype == DType::f32; }
template <class P> bool any_dtype(const P&) { return true; }

}  // namespace convlab
