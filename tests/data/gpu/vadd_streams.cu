// Two kernels on two streams, three launches each: the program the launcher proof
// profiles with Nsight Compute (`hipscope run --profiler ncu`).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale(float *c, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] *= s;
}

int main() {
    const int n = 1 << 20;
    float *a, *b, *c;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, n * sizeof(float));
    cudaStream_t s[2];
    for (auto &x : s) cudaStreamCreate(&x);
    for (int r = 0; r < 3; ++r) {
        vadd<<<(n + 255) / 256, 256, 0, s[r % 2]>>>(a, b, c, n);
        scale<<<(n + 255) / 256, 256, 0, s[(r + 1) % 2]>>>(c, 0.5f, n);
    }
    cudaDeviceSynchronize();
    printf("vadd_streams ok\n");
    return 0;
}
