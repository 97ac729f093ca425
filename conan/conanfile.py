import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout

required_conan_version = ">=2.0"


class GraftConan(ConanFile):
    name = "graft"
    description = ("PyTorch-like tensors, autograd, graph capture and a profiling "
                   "graph executor in header-only C++20 (Highway SIMD, Boost.Hana)")
    license = "MIT"
    url = "https://github.com/conan-io/conan-center-index"
    topics = ("autograd", "tensor", "simd", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True

    def set_version(self):
        # Single source of truth: project(graft VERSION x.y.z) in ../CMakeLists.txt.
        cmakelists = load(self, os.path.join(self.recipe_folder, "..", "CMakeLists.txt"))
        match = re.search(r"project\s*\(\s*graft\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", cmakelists)
        self.version = match.group(1)

    def export_sources(self):
        # The recipe lives in conan/; the headers are one folder up.
        copy(self, "*", src=os.path.join(self.recipe_folder, "..", "include"),
             dst=os.path.join(self.export_sources_folder, "include"))
        copy(self, "LICENSE", src=os.path.join(self.recipe_folder, ".."),
             dst=self.export_sources_folder)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        # graft's public headers include Boost.Hana and Highway.
        self.requires("boost/[>=1.74 <2]", options={"header_only": True},
                      transitive_headers=True)
        self.requires("highway/[>=1.0.3 <2]", transitive_headers=True)

    def build_requirements(self):
        self.test_requires("catch2/[>=2.13 <3]")

    def package_id(self):
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, 20)

    def build(self):
        pass

    def package(self):
        copy(self, "LICENSE", src=self.source_folder,
             dst=os.path.join(self.package_folder, "licenses"))
        copy(self, "*", src=os.path.join(self.source_folder, "include"),
             dst=os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "graft")
        self.cpp_info.set_property("cmake_target_name", "graft::graft")
