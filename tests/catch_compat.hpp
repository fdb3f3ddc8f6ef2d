// tests/catch_compat.hpp — one include for Catch2 v2 (Debian here) and v3 (the
// GPU machine). Test files include this and nothing else from Catch.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/interfaces/catch_interfaces_test_invoker.hpp>
#include <catch2/internal/catch_test_registry.hpp>
#include <catch2/internal/catch_unique_ptr.hpp>
#define CONVLAB_CATCH_V3 1
#else
#include <catch2/catch.hpp>
#define CONVLAB_CATCH_V3 0
#endif
