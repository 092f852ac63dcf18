// A/A workload for issue 12 section 5: the same program in every arm of a sweep.
// A fixed loop of memory-bound axpy kernels over 16 Mi floats, timed with CUDA events
// after a warm-up; prints the mean kernel-step time as HIPSCOPE_RESULT {"wall_s": ...}.
// Compiled C++, so that one run costs well under a second (a PyTorch program pays
// seconds of start-up) and ten A/A sweeps fit into the device budget.
//
//     nvcc -O2 -arch=sm_90 -o aa_loop aa_loop.cu && ./aa_loop [steps]
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void axpy(float a, const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

static int check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "aa_loop: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
    return 0;
}

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
    const int n = 16 << 20, warm = 20, threads = 256, blocks = 132 * 8;
    float *x = nullptr, *y = nullptr;
    check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc x");
    check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc y");
    check(cudaMemset(x, 0, n * sizeof(float)), "cudaMemset x");
    check(cudaMemset(y, 0, n * sizeof(float)), "cudaMemset y");
    for (int i = 0; i < warm; ++i) axpy<<<blocks, threads>>>(1.0f, x, y, n);
    cudaEvent_t t0, t1;
    check(cudaEventCreate(&t0), "cudaEventCreate");
    check(cudaEventCreate(&t1), "cudaEventCreate");
    check(cudaDeviceSynchronize(), "warm-up");
    check(cudaEventRecord(t0), "cudaEventRecord");
    for (int i = 0; i < steps; ++i) axpy<<<blocks, threads>>>(0.5f, x, y, n);
    check(cudaEventRecord(t1), "cudaEventRecord");
    check(cudaEventSynchronize(t1), "timed loop");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
    std::printf("HIPSCOPE_RESULT {\"wall_s\": %.9g, \"steps\": %d}\n", ms / 1000.0 / steps, steps);
    return 0;
}
