import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir

required_conan_version = ">=2.0"


class GraftConan(ConanFile):
    name = "graft"
    description = ("PyTorch-like tensors, autograd, graph capture and a profiling "
                   "graph executor in header-only C++20 (Highway SIMD, Boost.Hana)")
    license = "MIT"
    url = "https://github.com/conan-io/conan-center-index"
    topics = ("autograd", "tensor", "simd", "header-only")
    # header_only=True (default): a header library. header_only=False: the compiled
    # mode, libgraft.a (CMake target graft_compiled) plus the headers, consumed with
    # GRAFT_COMPILED_LIB defined. configure() sets the package type accordingly.
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "header_only": [True, False],
    }
    default_options = {
        "header_only": True,
    }
    no_copy_source = True

    def set_version(self):
        # Single source of truth: project(graft VERSION x.y.z) in ../CMakeLists.txt.
        cmakelists = load(self, os.path.join(self.recipe_folder, "..", "CMakeLists.txt"))
        match = re.search(r"project\s*\(\s*graft\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", cmakelists)
        self.version = match.group(1)

    def export_sources(self):
        # The recipe lives in conan/; the sources are one folder up. include/ is all a
        # header-only package needs; CMakeLists.txt, cmake/ and src/ build libgraft.a.
        root = os.path.join(self.recipe_folder, "..")
        for folder in ("include", "src", "cmake"):
            copy(self, "*", src=os.path.join(root, folder),
                 dst=os.path.join(self.export_sources_folder, folder))
        for name in ("CMakeLists.txt", "LICENSE"):
            copy(self, name, src=root, dst=self.export_sources_folder)

    def configure(self):
        if self.options.header_only:
            self.package_type = "header-library"

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # graft's public headers include Boost.Hana and Highway (headers only: graft
        # needs no Highway library at run time).
        self.requires("boost/[>=1.74 <2]", options={"header_only": True},
                      transitive_headers=True)
        self.requires("highway/[>=1.0.3 <2]", transitive_headers=True)

    def package_id(self):
        if self.info.options.header_only:
            self.info.clear()

    def validate(self):
        # The headers need C++20 in every consumer, in both modes: set
        # compiler.cppstd=20 (or gnu20) in the profile or with -s compiler.cppstd=20.
        check_min_cppstd(self, 20)

    def generate(self):
        if self.options.header_only:
            return
        tc = CMakeToolchain(self)
        tc.cache_variables["GRAFT_BUILD_COMPILED"] = True
        tc.cache_variables["GRAFT_INSTALL"] = True
        tc.cache_variables["GRAFT_BUILD_TESTS"] = False
        tc.cache_variables["GRAFT_BUILD_EXAMPLES"] = False
        tc.cache_variables["GRAFT_BUILD_BENCH"] = False
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        if self.options.header_only:
            return
        cmake = CMake(self)
        cmake.configure()
        cmake.build()  # tests, examples and benchmarks are off: only graft_compiled

    def package(self):
        copy(self, "LICENSE", src=self.source_folder,
             dst=os.path.join(self.package_folder, "licenses"))
        if self.options.header_only:
            copy(self, "*", src=os.path.join(self.source_folder, "include"),
                 dst=os.path.join(self.package_folder, "include"))
        else:
            # Headers (*.hpp, *.ipp) and lib/libgraft.a; CMakeDeps writes the CMake files.
            cmake = CMake(self)
            cmake.install()
            rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
            rmdir(self, os.path.join(self.package_folder, "share"))

    def package_info(self):
        # Consumers link graft::graft in both modes (find_package(graft CONFIG)).
        self.cpp_info.set_property("cmake_file_name", "graft")
        self.cpp_info.set_property("cmake_target_name", "graft::graft")
        self.cpp_info.bindirs = []
        if self.settings.os in ["Linux", "FreeBSD"]:
            # graft's jit executor runs std::thread workers; <cmath> kernels.
            self.cpp_info.system_libs = ["pthread", "m"]
        if self.options.header_only:
            self.cpp_info.libdirs = []
        else:
            # Compiled mode: graft::graft carries libgraft.a and GRAFT_COMPILED_LIB, like
            # graft::compiled of graft's own CMake install, which is also its alias here.
            self.cpp_info.set_property("cmake_target_aliases", ["graft::compiled"])
            self.cpp_info.libs = ["graft"]
            self.cpp_info.defines = ["GRAFT_COMPILED_LIB"]
