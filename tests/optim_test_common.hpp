#pragma once
// Helpers shared by tests/test_optim_more.cpp and tests/test_optim_schedulers.cpp (not a test TU
// itself): error checks, and the PyTorch fixture tests/fixtures/optim.txt (written by
// tests/fixtures/gen_optim.py, which gives the format).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

namespace ot {

/// Runs f and requires a graft::error whose message contains `part`.
inline void check_error(const std::function<void()>& f, const std::string& part) {
    try {
        f();
    } catch (const graft::error& e) {
        INFO("message: " << e.what());
        CHECK(std::string(e.what()).find(part) != std::string::npos);
        return;
    }
    FAIL("expected graft::error containing: " << part);
}

/// The fixture's records by name (read once).
inline const std::map<std::string, std::vector<double>>& fixture() {
    static const std::map<std::string, std::vector<double>> records = [] {
        std::map<std::string, std::vector<double>> r;
        const std::string path = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/optim.txt";
        std::ifstream in(path);
        if (!in) FAIL("cannot open " << path);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream is(line);
            std::string name, token;
            std::size_t count = 0;
            is >> name >> count;
            std::vector<double> values;
            while (is >> token) {
                char* end = nullptr;
                values.push_back(std::strtod(token.c_str(), &end));
                if (end == token.c_str() || *end != '\0') FAIL("optim.txt: bad number '" << token << "' in " << name);
            }
            if (values.size() != count)
                FAIL("optim.txt: " << name << " has " << values.size() << " values, not " << count);
            r[name] = std::move(values);
        }
        return r;
    }();
    return records;
}

inline const std::vector<double>& record(const std::string& name) {
    auto it = fixture().find(name);
    if (it == fixture().end()) FAIL("optim.txt has no record " << name);
    return it->second;
}

/// |got - want| <= tol * (1 + |want|), element by element.
inline void require_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
        REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
    }
}

}  // namespace ot
